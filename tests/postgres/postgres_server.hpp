// A PostgreSQL of the test's own: a fresh cluster (initdb) in a temporary folder, listening
// only on a Unix socket in that folder, run as an unprivileged user (PostgreSQL refuses root:
// as root, the cspd-test user .ci/setup creates; otherwise as ourselves). The packaged
// cluster (port 5432, /var/run/postgresql) is never touched.
#pragma once

#include "temp_dir.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace cspd::test {

class PostgresServer {
public:
    static constexpr const char* kUser = "cspd";           ///< the cluster's superuser (trust auth)
    static constexpr const char* kDatabase = "cspd_test";  ///< created on first start

    /// initdb, start, create the database. Throws, with the server's log, if it does not come up.
    PostgresServer();
    /// Stops it (fast) if it runs, and removes the cluster.
    ~PostgresServer();
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    /// pg_ctl -w start: returns once it accepts connections; throws otherwise.
    void start();
    /// pg_ctl -m fast stop: every session is ended (a database going away); returns once it is down.
    void stop();
    bool running() const { return running_; }

    /// PGHOST, PGPORT, PGUSER, PGDATABASE for this server into our environment, which a cspd
    /// started afterwards inherits.
    void export_environment() const;
    /// A libpq connection string, for the test's own connections.
    std::string conninfo() const;
    /// The end of the server's log, for failure messages.
    std::string log_tail(std::size_t bytes = 4000) const;

private:
    /// Runs `program` from PostgreSQL's bin folder as the server's user, output appended to
    /// `output`; its exit status (-1 if it could not run).
    int run(const std::string& program, const std::vector<std::string>& args, const std::filesystem::path& output) const;
    void start_or_throw(const char* what, int status) const;

    TempDir dir_;
    std::filesystem::path bin_, data_, log_, tools_log_;
    unsigned port_;
    bool running_ = false;
};

/// Where initdb and pg_ctl are: `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin.
/// Throws if neither has them.
std::filesystem::path postgres_bin_dir();

}  // namespace cspd::test
