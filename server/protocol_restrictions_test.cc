#include "server/protocol_restrictions.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

// Looks headers up in `headers`.
auto From(const std::map<std::string, std::string>& headers) {
  return [&headers](absl::string_view key) -> std::optional<absl::string_view> {
    auto it = headers.find(std::string(key));
    if (it == headers.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ProtocolRestrictionsTest, RestrictedGroupsNeedTheirHeaderValue) {
  ProtocolRestrictions r;
  ASSERT_TRUE(r.Add("model-repository,shared-memory:Admin-Key=s3cret").ok());
  ASSERT_TRUE(r.Add("inference:infer-key=abc").ok());
  const std::map<std::string, std::string> none;
  const std::map<std::string, std::string> admin = {{"admin-key", "s3cret"}};
  const std::map<std::string, std::string> wrong = {{"admin-key", "guess"}};
  absl::Status s = r.Check(ProtocolGroup::kModelRepository, From(none));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "This protocol is restricted, expecting header 'admin-key'");
  EXPECT_FALSE(r.Check(ProtocolGroup::kSharedMemory, From(wrong)).ok());
  EXPECT_TRUE(r.Check(ProtocolGroup::kModelRepository, From(admin)).ok());
  EXPECT_TRUE(r.Check(ProtocolGroup::kSharedMemory, From(admin)).ok());
  EXPECT_FALSE(r.Check(ProtocolGroup::kInference, From(admin)).ok());
  EXPECT_TRUE(r.Check(ProtocolGroup::kHealth, From(none)).ok()) << "open";
  EXPECT_TRUE(r.Check(ProtocolGroup::kStatistics, From(none)).ok());
  EXPECT_FALSE(r.empty());
  EXPECT_TRUE(ProtocolRestrictions().empty());
}

TEST(ProtocolRestrictionsTest, BadFlagValuesNameTheProblem) {
  ProtocolRestrictions r;
  EXPECT_NE(r.Add("inference").message().find("no ':'"), std::string::npos);
  EXPECT_NE(r.Add("inference:key").message().find("no <header>=<value>"),
            std::string::npos);
  EXPECT_NE(r.Add("inference:=v").message().find("no <header>=<value>"),
            std::string::npos);
  EXPECT_NE(r.Add("everything:k=v").message().find("unknown protocol"),
            std::string::npos);
  ASSERT_TRUE(r.Add("health:k=v").ok());
  EXPECT_NE(r.Add("metadata,health:k2=v").message().find("restricted twice"),
            std::string::npos);
  // The refused value left nothing behind: metadata is still open.
  const std::map<std::string, std::string> none;
  EXPECT_TRUE(r.Check(ProtocolGroup::kMetadata, From(none)).ok());
}

}  // namespace
}  // namespace coalesce
