#include "common/fd_passing.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cspd {

bool send_message(int socket, std::string_view text, int fd) {
    iovec part{const_cast<char*>(text.data()), text.size()};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (fd >= 0) {
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        cmsghdr* header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    }
    ssize_t sent;
    do sent = ::sendmsg(socket, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent == static_cast<ssize_t>(text.size());
}

ssize_t receive_message(int socket, char* buffer, std::size_t size, int* fd, bool dont_wait) {
    iovec part{buffer, size};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t got;
    do got = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC | (dont_wait ? MSG_DONTWAIT : 0));
    while (got < 0 && errno == EINTR);
    if (fd) *fd = -1;
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); got > 0 && header; header = CMSG_NXTHDR(&message, header))
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
            int received;
            std::memcpy(&received, CMSG_DATA(header), sizeof received);
            if (fd) *fd = received;
            else ::close(received);
        }
    return got;
}

int receive_descriptor(int socket) {
    char byte;
    int fd = -1;
    const ssize_t got = receive_message(socket, &byte, 1, &fd, true);
    if (got == 0) return -1;
    if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? -2 : -1;
    return fd >= 0 ? fd : -2;
}

}  // namespace cspd
