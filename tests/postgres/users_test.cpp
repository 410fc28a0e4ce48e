// examples/users.c (blocking, libpq's synchronous API) and examples/users_async.c (deferred
// replies, libpq's asynchronous API) served by the real cspd over real sockets, against a real
// PostgreSQL of the test's own: every test runs for both.
#include "http_client.hpp"
#include "postgres_server.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace cspd::test {
namespace {

using namespace std::chrono_literals;

// The test's own connection to the database: to hold a lock, to look at what waits.
class Sql {
public:
    explicit Sql(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
        if (PQstatus(conn_) != CONNECTION_OK) throw std::runtime_error(std::string("connect: ") + PQerrorMessage(conn_));
    }
    ~Sql() { PQfinish(conn_); }
    Sql(const Sql&) = delete;
    Sql& operator=(const Sql&) = delete;

    /// Runs `sql`: the first column of its first row, "" if none. Throws on an error.
    std::string value(const char* sql) {
        std::unique_ptr<PGresult, void (*)(PGresult*)> res(PQexec(conn_, sql), PQclear);
        const ExecStatusType status = PQresultStatus(res.get());
        if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
            throw std::runtime_error(std::string(sql) + ": " + PQerrorMessage(conn_));
        return PQntuples(res.get()) > 0 ? PQgetvalue(res.get(), 0, 0) : "";
    }

private:
    PGconn* conn_;
};

constexpr const char* kWaitingOnALock =
    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT row_to_json%'";

class UsersTest : public ::testing::TestWithParam<const char*> {
protected:
    /// Starts cspd serving the handler under test; the database's settings reach it through
    /// the environment it inherits (libpq's PGHOST, PGPORT, PGUSER, PGDATABASE).
    void serve(std::vector<std::string> args = {}) {
        postgres.export_environment();
        server = std::make_unique<TestServer>(std::move(args), false);
        const std::string name = GetParam();
        std::filesystem::copy_file(test_handler("examples/" + name + ".so"), server->handlers() / (name + ".so"));
        server->start();
        base = "/csp/" + name;
    }
    void TearDown() override {
        if (server) {
            EXPECT_EQ(server->stop(), 0) << server->log();
        }
    }

    static std::string request(const std::string& method, const std::string& target, const std::string& body) {
        std::string text = method + " " + target + " HTTP/1.1\r\nHost: h\r\n";
        if (!body.empty() || method == "POST")
            text += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
        return text + "\r\n" + body;
    }
    static std::optional<HttpResponse> call(HttpClient& client, const std::string& method, const std::string& target,
                                            const std::string& body = "") {
        client.send(request(method, target, body));
        return client.read_response();
    }
    std::optional<HttpResponse> call(const std::string& method, const std::string& target,
                                     const std::string& body = "") {
        HttpClient client(server->port());
        return call(client, method, target, body);
    }
    /// POSTs a user; its id, from Location.
    std::string create(const std::string& name) {
        auto created = call("POST", base, R"({"name":")" + name + R"(","email":")" + name + R"(@example.org"})");
        if (!created || created->status != 201) throw std::runtime_error("POST failed");
        return created->header("location").substr(base.size() + 1);
    }
    static std::string user_json(const std::string& id, const std::string& name) {
        return R"({"id":)" + id + R"(,"name":")" + name + R"(","email":")" + name + R"(@example.org"})";
    }
    std::size_t replies_owed() const {
        auto metrics = fetch(server->port(), "/metrics");
        if (!metrics) return ~std::size_t(0);
        const auto at = metrics->body.find("\ncspd_replies_owed ");
        return at == std::string::npos ? ~std::size_t(0) : std::stoul(metrics->body.substr(at + 19));
    }

    PostgresServer postgres;
    std::unique_ptr<TestServer> server;
    std::string base;
};

TEST_P(UsersTest, CreatesGetsAndDeletesAUser) {
    serve();
    auto created = call("POST", base, R"({"name":"Eva","email":"eva@example.org"})");
    ASSERT_TRUE(created);
    ASSERT_EQ(created->status, 201) << created->body;
    EXPECT_EQ(created->header("content-type"), "application/json");
    const std::string location = created->header("location");
    ASSERT_EQ(location.rfind(base + "/", 0), 0u) << location;
    const std::string id = location.substr(base.size() + 1);
    ASSERT_FALSE(id.empty());
    ASSERT_EQ(id.find_first_not_of("0123456789"), std::string::npos) << location;
    EXPECT_EQ(created->body, R"({"id":)" + id + R"(,"name":"Eva","email":"eva@example.org"})");

    auto got = call("GET", location);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(got->header("content-type"), "application/json");
    EXPECT_EQ(got->body, created->body);

    auto deleted = call("DELETE", location);
    ASSERT_TRUE(deleted);
    EXPECT_EQ(deleted->status, 204);
    EXPECT_EQ(deleted->body, "");
    EXPECT_EQ(call("GET", location)->status, 404);
    EXPECT_EQ(call("DELETE", location)->status, 404);

    // The collection with a trailing slash; what PostgreSQL does not know is left out.
    auto again = call("POST", base + "/", R"({"email":"ana@example.org","name":"Ana","id":1,"x":[1]})");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 201) << again->body;
    const std::string id2 = again->header("location").substr(base.size() + 1);
    EXPECT_NE(id2, id);
    EXPECT_EQ(again->body, R"({"id":)" + id2 + R"(,"name":"Ana","email":"ana@example.org"})");
}

TEST_P(UsersTest, BadBodiesAre400) {
    serve();
    const std::string missing_email = R"({"name":"Eva"})";
    const std::vector<std::string> bodies{"{bad",
                                          "",
                                          "[1]",
                                          "42",
                                          "null",
                                          R"({"name":null,"email":"e"})",
                                          missing_email,
                                          R"({"name":"a\u0000b","email":"e"})",  // PostgreSQL's text has no NUL
                                          std::string("{\"name\":\"a\0\"}", 13)};  // a NUL in the body itself
    for (const std::string& body : bodies) {
        auto r = call("POST", base, body);
        ASSERT_TRUE(r) << body;
        EXPECT_EQ(r->status, 400) << body << " -> " << r->body;
        EXPECT_EQ(r->header("content-type"), "application/json");
        EXPECT_EQ(r->body.rfind("{\"error\":\"", 0), 0u) << r->body;
    }
    auto r = call("POST", base, missing_email);
    EXPECT_NE(r->body.find("\\\"email\\\""), std::string::npos) << r->body;  // PostgreSQL's reason, escaped
}

TEST_P(UsersTest, BadIdsAre400) {
    serve();
    for (const char* id : {"abc", "12x", "-1", "1.5", "1/2", "99999999999999999999"}) {
        auto r = call("GET", base + "/" + id);
        ASSERT_TRUE(r) << id;
        EXPECT_EQ(r->status, 400) << id << " -> " << r->body;
        EXPECT_EQ(call("DELETE", base + "/" + id)->status, 400) << id;
    }
    EXPECT_EQ(call("GET", base + "/0")->status, 404);
}

TEST_P(UsersTest, OtherMethodsAre405WithAllow) {
    serve();
    for (const auto& [method, target, allow] :
         std::vector<std::tuple<std::string, std::string, std::string>>{{"PUT", base + "/1", "GET, DELETE"},
                                                                        {"POST", base + "/1", "GET, DELETE"},
                                                                        {"GET", base, "POST"},
                                                                        {"DELETE", base + "/", "POST"}}) {
        auto r = call(method, target, method == "PUT" ? "{}" : "");
        ASSERT_TRUE(r) << method << " " << target;
        EXPECT_EQ(r->status, 405) << method << " " << target;
        EXPECT_EQ(r->header("allow"), allow) << method << " " << target;
    }
}

TEST_P(UsersTest, ManyConcurrentClientsAreEachAnsweredRightly) {
    serve();
    constexpr int kClients = 32, kRounds = 10;
    std::atomic<int> right{0};
    std::vector<std::string> wrong(kClients);
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
        clients.emplace_back([&, c] {
            try {
                HttpClient client(server->port(), 30s);  // keep-alive: each round on one connection
                for (int i = 0; i < kRounds; ++i) {
                    const std::string name = "c" + std::to_string(c) + "r" + std::to_string(i);
                    auto created = call(client, "POST", base,
                                        R"({"name":")" + name + R"(","email":")" + name + R"(@example.org"})");
                    if (!created || created->status != 201) throw std::runtime_error("POST " + name);
                    const std::string id = created->header("location").substr(base.size() + 1);
                    auto got = call(client, "GET", base + "/" + id);
                    if (!got || got->status != 200 || got->body != user_json(id, name))
                        throw std::runtime_error("GET " + name + ": " + (got ? got->body : "no answer"));
                    if (i % 2 == 0) {
                        auto deleted = call(client, "DELETE", base + "/" + id);
                        if (!deleted || deleted->status != 204) throw std::runtime_error("DELETE " + name);
                    }
                    ++right;
                }
            } catch (const std::exception& e) {
                wrong[c] = e.what();
            }
        });
    for (auto& t : clients) t.join();
    for (int c = 0; c < kClients; ++c) EXPECT_EQ(wrong[c], "") << "client " << c;
    EXPECT_EQ(right, kClients * kRounds);
    Sql sql(postgres.conninfo());
    EXPECT_EQ(sql.value("SELECT count(*) FROM users WHERE name LIKE 'c%r%'"), std::to_string(kClients * kRounds / 2));
}

TEST_P(UsersTest, AClientLeavingMidQueryLeavesTheRestRight) {
    serve({"--threads", "1"});  // one loop: for users_async both requests share its connection
    const std::string left = create("left"), stays = create("stays");
    Sql locker(postgres.conninfo());
    locker.value("BEGIN");
    locker.value("LOCK TABLE users IN ACCESS EXCLUSIVE MODE");  // every statement on users waits

    auto leaving = std::make_unique<HttpClient>(server->port());
    leaving->send(request("GET", base + "/" + left, ""));
    Sql watcher(postgres.conninfo());
    ASSERT_TRUE(eventually([&] { return watcher.value(kWaitingOnALock) == "1"; }, 10s));  // its query runs
    HttpClient staying(server->port(), 30s);
    staying.send(request("GET", base + "/" + stays, ""));
    ASSERT_TRUE(eventually([&] { return replies_owed() == 2; }, 10s));
    leaving.reset();
    ASSERT_TRUE(eventually([&] { return replies_owed() == 1; }, 10s));  // the host saw it go

    locker.value("COMMIT");
    auto answer = staying.read_response();
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 200);
    EXPECT_EQ(answer->body, user_json(stays, "stays"));  // not the answer meant for the one that left
    auto later = call(staying, "GET", base + "/" + left);
    ASSERT_TRUE(later);
    EXPECT_EQ(later->body, user_json(left, "left"));
    EXPECT_TRUE(eventually([&] { return replies_owed() == 0; }));
}

TEST_P(UsersTest, TheDatabaseGoingAwayGives503UntilItIsBack) {
    serve();
    const std::string id = create("kept");
    Sql locker(postgres.conninfo());
    locker.value("BEGIN");
    locker.value("LOCK TABLE users IN ACCESS EXCLUSIVE MODE");
    HttpClient in_flight(server->port(), 30s);
    in_flight.send(request("GET", base + "/" + id, ""));
    Sql watcher(postgres.conninfo());
    ASSERT_TRUE(eventually([&] { return watcher.value(kWaitingOnALock) == "1"; }, 10s));

    // What a shutdown does to each session, done to the handler's alone: the lock stays held,
    // so its query cannot have finished first (with the server stopped, the locker's end could
    // let it).
    const std::string terminate = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                                  " WHERE application_name = '" + std::string(GetParam()) + "'";
    EXPECT_NE(watcher.value(terminate.c_str()), "0");
    auto cut = in_flight.read_response();
    ASSERT_TRUE(cut) << "no answer for the query whose connection was lost";
    EXPECT_EQ(cut->status, 503) << cut->body;
    EXPECT_EQ(cut->header("retry-after"), "1");
    locker.value("COMMIT");

    postgres.stop();
    for (const char* method : {"GET", "DELETE"}) EXPECT_EQ(call(in_flight, method, base + "/" + id)->status, 503);
    EXPECT_EQ(call(in_flight, "POST", base, R"({"name":"x","email":"y"})")->status, 503);
    EXPECT_TRUE(server->wait_for_log("the database is unavailable"));

    postgres.start();
    auto back = call(in_flight, "GET", base + "/" + id);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->status, 200) << back->body;
    EXPECT_EQ(back->body, user_json(id, "kept"));
    EXPECT_EQ(call(in_flight, "POST", base, R"({"name":"new","email":"new@example.org"})")->status, 201);
}

TEST_P(UsersTest, ARestartedDatabaseIsNotNoticed) {
    serve({"--threads", "1"});  // one loop: for users_async the next request meets the old connection
    const std::string id = create("before");
    postgres.stop();  // its sessions are ended while idle
    postgres.start();
    auto got = call("GET", base + "/" + id);  // the closed connection is seen and replaced, not used
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 200) << got->body;
    EXPECT_EQ(got->body, user_json(id, "before"));
}

TEST_P(UsersTest, AServerStoppingMidQueryStopsInTime) {
    serve({"--drain-timeout", "3"});
    const std::string id = create("late");
    Sql locker(postgres.conninfo());
    locker.value("BEGIN");
    locker.value("LOCK TABLE users IN ACCESS EXCLUSIVE MODE");
    HttpClient waiting(server->port(), 30s);
    waiting.send(request("GET", base + "/" + id, ""));
    Sql watcher(postgres.conninfo());
    ASSERT_TRUE(eventually([&] { return watcher.value(kWaitingOnALock) == "1"; }, 10s));
    EXPECT_EQ(server->stop(), 0) << server->log();  // the drain gives up on the query at its deadline
    // users_async finishes what it owes when the loop ends, so its version is cleaned up and
    // unloaded; a blocking call stuck in libpq is left behind by the host (and said so).
    if (std::string(GetParam()) == "users_async") {
        EXPECT_NE(server->log().find(": unloaded"), std::string::npos) << server->log();
    }
    server.reset();
}

INSTANTIATE_TEST_SUITE_P(BothHandlers, UsersTest, ::testing::Values("users", "users_async"),
                         [](const ::testing::TestParamInfo<const char*>& handler) { return std::string(handler.param); });

}  // namespace
}  // namespace cspd::test
