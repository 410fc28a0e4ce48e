#include "handler/descriptor_check.hpp"

#include "handler/abi_v1.hpp"

#include <cstddef>
#include <string>

namespace cspd {
namespace {
std::string abi_text(unsigned version) {
    if (version >> 16 == 0) return std::to_string(version);
    return std::to_string(version >> 16) + "." + std::to_string(version & 0xffff);
}
}  // namespace

DescriptorCheck check_descriptor(const void* symbol) {
    DescriptorCheck check;
    // Every ABI begins with the version and the descriptor's size: read those first.
    const auto* head = static_cast<const abi1::handler_descriptor*>(symbol);
    const unsigned version = head->abi_version;
    if (version == abi1::kVersion) {
        if (head->descriptor_size < sizeof(abi1::handler_descriptor) || !head->handle) {
            check.error = LoadError::bad_descriptor;
            check.why = "malformed csp_handler descriptor (ABI 1)";
            return check;
        }
        check.entry.abi = HandlerAbi::v1;
        check.entry.handle_v1 = head->handle;
        check.entry.cleanup = head->cleanup;
        check.init = head->init;
        return check;
    }
    const unsigned major = version >> 16, minor = version & 0xffff;
    if (major != CSP_ABI_MAJOR) {
        check.error = LoadError::wrong_abi;
        check.why = "built for SDK ABI version " + abi_text(version) + ", this host speaks 1 and " +
                    abi_text(CSP_ABI_VERSION) + " (rebuild it against this SDK)";
        return check;
    }
    if (minor > CSP_ABI_MINOR) {
        check.error = LoadError::wrong_abi;
        check.why = "built for SDK ABI version " + abi_text(version) + ", newer than this host's " +
                    abi_text(CSP_ABI_VERSION) + " (upgrade cspd, or build against an SDK of 2." +
                    std::to_string(CSP_ABI_MINOR) + " or older)";
        return check;
    }
    const auto* descriptor = static_cast<const csp_handler_descriptor*>(symbol);
    if (descriptor->descriptor_size < offsetof(csp_handler_descriptor, flags) + sizeof descriptor->flags ||
        !descriptor->handle) {
        check.error = LoadError::bad_descriptor;
        check.why = "malformed csp_handler descriptor";
        return check;
    }
    check.entry.abi = HandlerAbi::v2;
    check.entry.minor = minor;
    check.entry.handle = descriptor->handle;
    check.entry.cleanup = descriptor->cleanup;
    check.entry.blocking = (descriptor->flags & CSP_HANDLER_BLOCKING) != 0;
    check.entry.reads_config = false;
    check.init = descriptor->init;
    // A descriptor built before 2.2 ends before this field.
    if (descriptor->descriptor_size >=
        offsetof(csp_handler_descriptor, init_with_context) + sizeof descriptor->init_with_context)
        check.init_with_context = descriptor->init_with_context;
    check.entry.reads_config = check.init_with_context != nullptr;
    return check;
}

}  // namespace cspd
