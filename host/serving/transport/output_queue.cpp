#include "serving/transport/output_queue.hpp"

namespace cspd {

OutputQueue::Written OutputQueue::send(Transport& transport, std::string_view bytes) {
    if (!empty()) {
        append(bytes);
        return write_to(transport);
    }
    const Transport::Moved sent = transport.write(bytes);
    switch (sent.io) {
    case Transport::Io::done: return {Progress::done, sent.bytes};
    case Transport::Io::would_block: append(bytes.substr(sent.bytes)); return {Progress::would_block, sent.bytes};
    default: return {Progress::failed, sent.bytes};
    }
}

OutputQueue::Written OutputQueue::send_owned(Transport& transport, std::string&& bytes) {
    if (!empty()) {
        append_owned(std::move(bytes));
        return write_to(transport);
    }
    items_.push_back({std::move(bytes), {}, 0});
    waiting_ += items_.back().bytes.size();
    return write_to(transport);
}

void OutputQueue::append_owned(std::string&& bytes) {
    if (bytes.empty()) return;
    waiting_ += bytes.size();
    items_.push_back({std::move(bytes), {}, 0});
}

void OutputQueue::append(std::string_view bytes) {
    if (bytes.empty()) return;
    if (front_ < items_.size() && !items_.back().file.is_open())
        items_.back().bytes.append(bytes);
    else
        items_.push_back({std::string(bytes), {}, 0});
    waiting_ += bytes.size();
}

void OutputQueue::append_file(std::string_view head, StaticFiles::File file) {
    append(head);
    waiting_ += file.size;
    items_.push_back({{}, std::move(file), 0});
}

OutputQueue::Written OutputQueue::write_to(Transport& transport) {
    std::size_t written = 0;
    while (front_ < items_.size()) {
        Item& item = items_[front_];
        const std::size_t total = item.size();
        while (item.sent < total) {
            const std::size_t left = total - item.sent;
            const Transport::Moved moved =
                item.file.is_open() ? transport.send_file(item.file.fd.get(), item.file.offset + item.sent, left)
                                    : transport.write(std::string_view(item.bytes).substr(item.sent));
            item.sent += moved.bytes;
            waiting_ -= moved.bytes;
            written += moved.bytes;
            if (moved.io == Transport::Io::would_block) return {Progress::would_block, written};
            if (moved.io != Transport::Io::done) return {Progress::failed, written};
            if (moved.bytes == 0) return {Progress::file_shrank, written};  // only a file's send moves none
        }
        item = Item{};  // closes a file, frees bytes, at once
        ++front_;
    }
    items_.clear();
    front_ = 0;
    return {Progress::done, written};
}

}  // namespace cspd
