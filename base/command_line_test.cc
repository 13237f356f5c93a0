#include "base/command_line.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

struct Parsed {
  absl::Status status;
  bool help = false;
};

class CommandLineTest : public ::testing::Test {
 protected:
  CommandLineTest() : app_(MakeCommandLine("A test binary.")) {
    app_->add_option("--model-repository", repository_, "Where the models are")
        ->required();  // coalesce-server checks it itself, after the rest
    app_->add_option("--grpc-port", port_, "Port")->check(CLI::Range(0, 65535));
    AddBoolFlag(*app_, "--allow-metrics", metrics_, "Serve metrics");
    app_->add_option("--load-model", models_, "Repeatable")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->allow_extra_args(false);
    AddOptionWith(
        *app_, "--input",
        [this](const std::string& v) -> absl::Status {
          if (v.find('=') == std::string::npos)
            return absl::InvalidArgumentError("--input needs NAME=FILE");
          inputs_.push_back(v);
          return absl::OkStatus();
        },
        "Repeatable, checked", /*repeatable=*/true);
  }

  Parsed Parse(std::vector<const char*> args) {
    args.insert(args.begin(), "binary");
    Parsed parsed;
    parsed.status = ParseCommandLine(*app_, static_cast<int>(args.size()),
                                     args.data(), &parsed.help);
    return parsed;
  }

  std::unique_ptr<CLI::App> app_;
  std::string repository_;
  int port_ = 8001;
  bool metrics_ = true;
  std::vector<std::string> models_;
  std::vector<std::string> inputs_;
};

TEST_F(CommandLineTest, TakesTritonsFormsOfEveryKind) {
  Parsed p =
      Parse({"--model-repository=/m", "--grpc-port", "9", "--allow-metrics",
             "false", "--load-model", "a", "--load-model=b"});
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_FALSE(p.help);
  EXPECT_EQ(repository_, "/m");
  EXPECT_EQ(port_, 9);
  EXPECT_FALSE(metrics_);
  EXPECT_EQ(models_, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(
      Parse({"--model-repository", "/m", "--allow-metrics=1"}).status.ok());
  EXPECT_TRUE(metrics_);
  // Given twice, the last value counts.
  ASSERT_TRUE(
      Parse({"--model-repository", "/m", "--grpc-port", "1", "--grpc-port=2"})
          .status.ok());
  EXPECT_EQ(port_, 2);
}

TEST_F(CommandLineTest, OptionsWithAnApplyFunctionSeeEveryValueInOrder) {
  ASSERT_TRUE(
      Parse({"--model-repository", "/m", "--input", "a=1", "--input=b=2,3"})
          .status.ok());
  EXPECT_EQ(inputs_, (std::vector<std::string>{"a=1", "b=2,3"}));
  Parsed bad = Parse({"--model-repository", "/m", "--input", "a"});
  EXPECT_EQ(bad.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status.message().find("--input needs NAME=FILE"),
            std::string::npos)
      << bad.status;
}

TEST_F(CommandLineTest, RefusesWithAMessageNamingTheFlag) {
  struct Case {
    std::vector<const char*> args;
    const char* named;
  };
  const Case cases[] = {
      {{"--model-repository", "m", "--bogus", "1"}, "--bogus"},
      {{"--model-repository", "m", "--grpc-port", "70000"}, "--grpc-port"},
      {{"--model-repository", "m", "--grpc-port", "8x"}, "--grpc-port"},
      {{"--model-repository", "m", "--allow-metrics", "yes"},
       "--allow-metrics"},
      {{"--model-repository"}, "--model-repository"},
      {{"--grpc-port", "1"}, "--model-repository"},
      {{"--model-repository", "m", "stray"}, "stray"},
  };
  for (const Case& c : cases) {
    Parsed p = Parse(c.args);
    EXPECT_EQ(p.status.code(), absl::StatusCode::kInvalidArgument) << c.named;
    EXPECT_NE(p.status.message().find(c.named), std::string::npos) << p.status;
  }
}

TEST_F(CommandLineTest, HelpIsGeneratedAndNeedsNothingElse) {
  Parsed p = Parse({"--help"});
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_TRUE(p.help);
  const std::string usage = CommandLineUsage(*app_);
  EXPECT_EQ(usage.rfind("A test binary.", 0), 0u) << usage;
  for (const char* flag :
       {"--model-repository", "--grpc-port", "--allow-metrics true|false"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag << "\n" << usage;
  }
}

TEST_F(CommandLineTest, OrExitSaysWhetherAndHowMainShouldReturn) {
  auto run = [this](std::vector<const char*> args) {
    args.insert(args.begin(), "binary");
    return ParseCommandLineOrExit(*app_, static_cast<int>(args.size()),
                                  args.data(), "binary", 7);
  };
  EXPECT_EQ(run({"--model-repository", "/m"}), std::nullopt);
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_EQ(run({"--model-repository", "/m", "--bogus"}), 7);
}

}  // namespace
}  // namespace coalesce
