// The master's server folder: what its workers share on disk and what must outlive any one of
// them (kept handler versions, vetting verdicts, compiled sources). The master makes it private
// at start (a PrivateFolder, removed at exit), sweeps it now and then, and reads it for the
// version a quarantined one rolls back to.
#pragma once

#include "handler/kept_versions.hpp"
#include "process/crash_ledger.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace cspd {

/// Removes from `folder` what nobody serves, may roll back to, or is about to name (anything
/// younger than `age` stays).
void sweep_server_folder(const std::filesystem::path& folder, std::chrono::seconds age);

/// The version a quarantined version of `name` gives way to: the last good one, or (for a version
/// fenced before any worker served it) the one serving; none if nothing is kept.
std::optional<KeptVersion> rollback_target_in(const std::filesystem::path& folder, const std::string& name);

/// rollback_target_in(folder, ...) as the crash ledger asks for it.
CrashLedger::RollbackTarget rollback_targets_in(const std::filesystem::path& folder);

}  // namespace cspd
