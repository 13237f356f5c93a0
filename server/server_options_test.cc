#include "server/server_options.h"

#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

absl::StatusOr<ServerOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "coalesce-server");
  return ParseServerFlags(static_cast<int>(args.size()), args.data());
}

TEST(ServerOptionsTest, DefaultsMatchTriton) {
  auto options = Parse({"--model-repository", "/models"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->model_repository, "/models");
  EXPECT_EQ(options->grpc_port, 8001);
  EXPECT_EQ(options->model_control_mode, ModelControlMode::kNone);
  EXPECT_EQ(options->exit_timeout.count(), 30);
  EXPECT_TRUE(options->allow_metrics);
  EXPECT_EQ(options->metrics_port, 8002);
  EXPECT_EQ(options->metrics_address, "0.0.0.0");
}

TEST(ServerOptionsTest, MetricsFlags) {
  auto options = Parse({"--model-repository", "/m", "--allow-metrics", "false",
                        "--metrics-port=0", "--metrics-address", "127.0.0.1"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->allow_metrics);
  EXPECT_EQ(options->metrics_port, 0);
  EXPECT_EQ(options->metrics_address, "127.0.0.1");
  EXPECT_FALSE(
      Parse({"--model-repository", "/m", "--allow-metrics", "no"}).ok());
  EXPECT_FALSE(
      Parse({"--model-repository", "/m", "--metrics-port", "70000"}).ok());
}

TEST(ServerOptionsTest, ParsesEveryFlagInBothForms) {
  auto options = Parse({"--model-repository=/m", "--grpc-port", "0",
                        "--grpc-address=127.0.0.1", "--model-control-mode",
                        "explicit", "--load-model", "a", "--load-model=b",
                        "--log-level", "debug", "--exit-timeout-secs", "5"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->grpc_port, 0);
  EXPECT_EQ(options->grpc_address, "127.0.0.1");
  EXPECT_EQ(options->model_control_mode, ModelControlMode::kExplicit);
  EXPECT_EQ(options->startup_models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(options->log_level, "debug");
  EXPECT_EQ(options->exit_timeout.count(), 5);
}

TEST(ServerOptionsTest, RejectsBadInputNamingTheFlag) {
  struct Case {
    std::vector<const char*> args;
    const char* expected;
  };
  const Case cases[] = {
      {{"--grpc-port", "70000", "--model-repository", "m"}, "--grpc-port"},
      {{"--grpc-port", "12x", "--model-repository", "m"}, "--grpc-port"},
      {{"--model-control-mode", "polling", "--model-repository", "m"},
       "--model-control-mode"},
      {{"--log-level", "loud", "--model-repository", "m"}, "--log-level"},
      {{"--bogus", "1"}, "--bogus"},
      {{"--model-repository"}, "--model-repository"},
      {{"--grpc-port", "1"}, "--model-repository"},
  };
  for (const Case& c : cases) {
    auto options = Parse(c.args);
    ASSERT_FALSE(options.ok()) << c.expected;
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(options.status().message().find(c.expected), std::string::npos)
        << options.status();
  }
}

TEST(ServerOptionsTest, HelpNeedsNoRepository) {
  auto options = Parse({"--help"});
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->show_help);
  EXPECT_NE(ServerUsage().find("--exit-timeout-secs"), std::string::npos);
}

}  // namespace
}  // namespace coalesce

namespace coalesce {
namespace {

TEST(ServerOptionsTest, TlsFlagsAsTriton) {
  auto plain = Parse({"--model-repository", "/m"});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->grpc_use_ssl);
  EXPECT_EQ(plain->grpc_max_connection_age.count(), 0);

  auto tls = Parse({"--model-repository", "/m", "--grpc-use-ssl=true",
                    "--grpc-server-cert", "c.pem", "--grpc-server-key=k.pem",
                    "--grpc-max-connection-age-secs", "300"});
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(tls->grpc_use_ssl);
  EXPECT_FALSE(tls->grpc_use_ssl_mutual);
  EXPECT_EQ(tls->grpc_server_cert, "c.pem");
  EXPECT_EQ(tls->grpc_server_key, "k.pem");
  EXPECT_EQ(tls->grpc_max_connection_age.count(), 300);

  auto mutual = Parse({"--model-repository", "/m", "--grpc-use-ssl-mutual",
                       "true", "--grpc-server-cert", "c", "--grpc-server-key",
                       "k", "--grpc-root-cert", "ca"});
  ASSERT_TRUE(mutual.ok()) << mutual.status();
  EXPECT_TRUE(mutual->grpc_use_ssl);  // implied
  EXPECT_TRUE(mutual->grpc_use_ssl_mutual);
  EXPECT_EQ(mutual->grpc_root_cert, "ca");
}

TEST(ServerOptionsTest, TlsNeedsItsFiles) {
  auto no_key = Parse({"--model-repository", "/m", "--grpc-use-ssl", "true",
                       "--grpc-server-cert", "c"});
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("--grpc-server-key"),
            absl::string_view::npos);
  auto no_root =
      Parse({"--model-repository", "/m", "--grpc-use-ssl-mutual", "true",
             "--grpc-server-cert", "c", "--grpc-server-key", "k"});
  ASSERT_FALSE(no_root.ok());
  EXPECT_NE(no_root.status().message().find("--grpc-root-cert"),
            absl::string_view::npos);
  EXPECT_FALSE(
      Parse({"--model-repository", "/m", "--grpc-use-ssl", "yes"}).ok());
  EXPECT_FALSE(Parse({"--model-repository", "/m",
                      "--grpc-max-connection-age-secs", "-1"})
                   .ok());
}

}  // namespace
}  // namespace coalesce

namespace coalesce {
namespace {

TEST(ServerOptionsTest, PollMode) {
  auto options = Parse({"--model-repository", "/m", "--model-control-mode",
                        "poll", "--repository-poll-secs", "3"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->model_control_mode, ModelControlMode::kPoll);
  EXPECT_EQ(options->repository_poll.count(), 3);
  EXPECT_EQ(Parse({"--model-repository", "/m"})->repository_poll.count(), 15);
  EXPECT_FALSE(
      Parse({"--model-repository", "/m", "--repository-poll-secs", "0"}).ok());
}

}  // namespace
}  // namespace coalesce

namespace coalesce {
namespace {

TEST(ServerOptionsTest, RestrictedProtocolsRepeatWithCommasInValues) {
  auto options =
      Parse({"--model-repository", "/m", "--grpc-restricted-protocol",
             "model-repository,shared-memory:admin-key=s3cret",
             "--grpc-restricted-protocol=inference:infer-key=abc"});
  ASSERT_TRUE(options.ok()) << options.status();
  auto no_header = [](absl::string_view) {
    return std::optional<absl::string_view>();
  };
  const ProtocolRestrictions& r = options->grpc_restricted_protocols;
  for (ProtocolGroup g :
       {ProtocolGroup::kModelRepository, ProtocolGroup::kSharedMemory,
        ProtocolGroup::kInference}) {
    EXPECT_FALSE(r.Check(g, no_header).ok()) << static_cast<int>(g);
  }
  EXPECT_TRUE(r.Check(ProtocolGroup::kHealth, no_header).ok());
  auto bad = Parse({"--model-repository", "/m", "--grpc-restricted-protocol",
                    "inference=no-colon"});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--grpc-restricted-protocol"),
            std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace coalesce
