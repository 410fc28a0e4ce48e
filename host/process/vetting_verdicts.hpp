// Verdicts of vetting shared by every worker of a server, in its folder (verdicts/): the first
// worker to meet a version vets it while holding that version's lock; the others wait for the
// verdict it writes instead of starting vetting processes of their own. A worker that dies while
// vetting lets go of the lock (the kernel drops its flock), and the next one vets instead.
#pragma once

#include "common/unique_fd.hpp"
#include "handler/load_gate.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace cspd {

class VettingVerdicts {
public:
    /// `server_folder`: the master's; empty shares nothing (each process vets on its own).
    explicit VettingVerdicts(const std::filesystem::path& server_folder = {});

    bool enabled() const { return !folder_.empty(); }

    /// The verdict on version `id` ("NAME.HASH.SIZE"), if one was written.
    std::optional<GateVerdict> find(const std::string& id) const;
    /// Writes it, whole (a rename), for the other workers.
    void record(const std::string& id, const GateVerdict& verdict) const;
    /// The right to vet `id`, held while the descriptor stays open (an empty one when the lock
    /// cannot be made: vet without sharing); nullopt while another process holds it.
    std::optional<UniqueFd> claim(const std::string& id) const;

    /// Removes from `server_folder` the verdicts older than `age` but those that fence a version
    /// (a worker that starts later vets such a version again, once), and the free locks; how many.
    static std::size_t sweep(const std::filesystem::path& server_folder, std::chrono::seconds age);

private:
    std::filesystem::path folder_;
};

}  // namespace cspd
