// The live connections of one event loop: an intrusive list (the connections own
// themselves; this only points at them), their count, and the loop's connection
// counters. Loop thread only.
#pragma once

#include <cstddef>
#include <functional>

namespace cspd {

class Connection;
struct LoopSlot;

class ConnectionList {
public:
    /// `accepted`: a new client (counted), not one that changed protocol.
    void attach(Connection* connection, bool accepted = true);
    void detach(Connection* connection);

    std::size_t size() const { return size_; }
    bool empty() const { return head_ == nullptr; }

    /// Calls `visit(Connection&)` on each; `visit` may close (and so unlink) the one it is given.
    template <class Visit>
    void for_each(Visit&& visit);

    /// Counts attached connections into `slot` from now on.
    void attach_stats(LoopSlot& slot) { slot_ = &slot; }
    /// Called when the last connection detaches.
    void on_emptied(std::function<void()> callback) { on_emptied_ = std::move(callback); }

private:
    Connection* head_ = nullptr;
    std::size_t size_ = 0;
    LoopSlot* slot_ = nullptr;
    std::function<void()> on_emptied_;
};

}  // namespace cspd
