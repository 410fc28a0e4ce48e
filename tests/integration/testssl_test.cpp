// testssl.sh (Debian's package) against the HTTPS port: nothing rated HIGH or CRITICAL, and only
// TLS 1.2 and 1.3 offered. It takes testssl.sh about two minutes: its own binary, label "tls".
#include "command.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <string>

namespace cspd::test {
namespace {


TEST(Testssl, FindsNothingHighOrCriticalAndOnlyTls12And13) {
    TempDir dir;
    const auto certs = dir / "certs";
    std::filesystem::create_directories(certs);
    // A certificate from a CA of the test's own (given to testssl.sh), valid a year, with a CRL
    // address: what testssl.sh rates is then the server, not a self-signed test certificate.
    const auto ca = dir / "ca";
    std::filesystem::create_directories(ca);
    const std::string in = "cd " + ca.string() + " && ";
    ASSERT_EQ(run_command(in + "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem "
                       "-days 3650 -subj '/CN=cspd test CA' > /dev/null 2>&1 && "
                       "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr "
                       "-subj /CN=localhost > /dev/null 2>&1 && "
                       "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\ncrlDistributionPoints=URI:http://127.0.0.1:9/"
                       "test.crl\\nextendedKeyUsage=serverAuth\\nkeyUsage=critical,digitalSignature\\n' > ext && "
                       "openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 365 -extfile ext "
                       "-out leaf.pem > /dev/null 2>&1 && cat leaf.key leaf.pem > " +
                       (certs / "default.pem").string() + " && chmod 600 " + (certs / "default.pem").string() +
                       " && echo made"),
              "made\n");
    TestServer server({"--workers", "2", "--tls-port", "0", "--certs", certs.string()});
    const unsigned short tls_port = server.tls_port();
    ASSERT_NE(tls_port, 0);
    const auto report = dir / "testssl.json";
    run_command("testssl --quiet --color 0 --warnings batch --fast --add-ca " + (ca / "ca.pem").string() + " --jsonfile " +
        report.string() + " --ip 127.0.0.1 localhost:" + std::to_string(tls_port) + " > " +
        (dir / "testssl.out").string());
    std::ifstream in_report(report);
    const nlohmann::json findings = nlohmann::json::parse(in_report, nullptr, false);
    ASSERT_TRUE(findings.is_array() && !findings.empty()) << run_command("tail -20 " + (dir / "testssl.out").string());
    std::map<std::string, std::string> by_id;
    for (const auto& finding : findings) {
        const std::string severity = finding.value("severity", "");
        by_id[finding.value("id", "")] = finding.value("finding", "");
        EXPECT_TRUE(severity != "HIGH" && severity != "CRITICAL") << finding.dump();
    }
    EXPECT_EQ(by_id["SSLv2"], "not offered");
    EXPECT_EQ(by_id["SSLv3"], "not offered");
    EXPECT_EQ(by_id["TLS1"], "not offered");
    EXPECT_EQ(by_id["TLS1_1"], "not offered");
    EXPECT_EQ(by_id["TLS1_2"], "offered");
    EXPECT_EQ(by_id["TLS1_3"].rfind("offered", 0), 0u) << by_id["TLS1_3"];
    EXPECT_EQ(server.worker_pids().size(), 2u);  // nothing it sent cost a worker
}

}  // namespace
}  // namespace cspd::test
