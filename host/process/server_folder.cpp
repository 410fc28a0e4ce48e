#include "process/server_folder.hpp"

#include "handler/compiler.hpp"
#include "process/vetting_verdicts.hpp"

namespace cspd {

void sweep_server_folder(const std::filesystem::path& folder, std::chrono::seconds age) {
    KeptVersions::sweep(folder, age);
    VettingVerdicts::sweep(folder, age);
    HandlerCompiler::sweep(folder, age);
}

std::optional<KeptVersion> rollback_target_in(const std::filesystem::path& folder, const std::string& name) {
    if (std::optional<KeptVersion> good = KeptVersions::good_in(folder, name)) return good;
    return KeptVersions::serving_in(folder, name);
}

CrashLedger::RollbackTarget rollback_targets_in(const std::filesystem::path& folder) {
    return [folder](const std::string& name) -> std::optional<VersionKey> {
        const std::optional<KeptVersion> target = rollback_target_in(folder, name);
        if (!target) return std::nullopt;
        return VersionKey{name, target->size, target->content_hash};
    };
}

}  // namespace cspd
