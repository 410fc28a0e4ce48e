#include "serving/connection_list.hpp"

#include "serving/connection.hpp"
#include "stats/shared_stats.hpp"

namespace cspd {

void ConnectionList::attach(Connection* c, bool accepted) {
    ++size_;
    if (slot_) {
        if (accepted) bump(slot_->accepted_connections);
        slot_->open_connections.store(size_, std::memory_order_relaxed);
    }
    c->next = head_;
    if (head_) head_->prev = c;
    head_ = c;
}

void ConnectionList::detach(Connection* c) {
    --size_;
    if (slot_) slot_->open_connections.store(size_, std::memory_order_relaxed);
    if (c->prev)
        c->prev->next = c->next;
    else if (head_ == c)
        head_ = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = nullptr;
    if (!head_ && on_emptied_) on_emptied_();
}

}  // namespace cspd
