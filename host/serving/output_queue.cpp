#include "serving/output_queue.hpp"

#include <sys/sendfile.h>
#include <sys/socket.h>

#include <cerrno>

namespace cspd {

OutputQueue::Written OutputQueue::send(int fd, std::string_view bytes) {
    std::size_t sent = 0;
    if (empty()) {
        while (sent < bytes.size()) {
            const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            if (n < 0) return {Progress::failed, sent};
            sent += static_cast<std::size_t>(n);
        }
        if (sent == bytes.size()) return {Progress::done, sent};
    }
    append(bytes.substr(sent));
    Written rest = write_to(fd);
    rest.bytes += sent;
    return rest;
}

OutputQueue::Written OutputQueue::send_owned(int fd, std::string&& bytes) {
    if (!empty()) {
        append_owned(std::move(bytes));
        return write_to(fd);
    }
    items_.push_back({std::move(bytes), {}, 0});
    waiting_ += items_.back().bytes.size();
    return write_to(fd);
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

OutputQueue::Written OutputQueue::write_to(int fd) {
    std::size_t written = 0;
    while (front_ < items_.size()) {
        Item& item = items_[front_];
        const std::size_t total = item.size();
        while (item.sent < total) {
            ssize_t n;
            if (item.file.is_open()) {
                off_t offset = static_cast<off_t>(item.file.offset + item.sent);
                n = ::sendfile(fd, item.file.fd.get(), &offset, total - item.sent);
                if (n == 0) return {Progress::file_shrank, written};
            } else {
                n = ::send(fd, item.bytes.data() + item.sent, total - item.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            }
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) return {Progress::would_block, written};
                return {Progress::failed, written};
            }
            item.sent += static_cast<std::size_t>(n);
            waiting_ -= static_cast<std::size_t>(n);
            written += static_cast<std::size_t>(n);
        }
        item = Item{};  // closes a file, frees bytes, at once
        ++front_;
    }
    items_.clear();
    front_ = 0;
    return {Progress::done, written};
}

}  // namespace cspd
