#include "base/command_line.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace coalesce {
namespace {

constexpr size_t kHelpWidth = 80;
constexpr size_t kFlagColumn = 34;

// `text` broken into lines of at most `width` characters at spaces.
std::vector<std::string> Wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines(1);
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width)
      lines.emplace_back();
    if (!lines.back().empty()) lines.back() += ' ';
    absl::StrAppend(&lines.back(), word);
  }
  return lines;
}

// --help as the project writes it: the description (which carries the usage
// line), then one entry per flag: "--name TYPE" and its help, wrapped, with
// the default.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "";
  }

  std::string make_option(const CLI::Option* opt,
                          bool positional) const override {
    std::string flag = absl::StrCat("  ", opt->get_name(positional));
    if (const std::string type = opt->get_type_name(); !type.empty())
      absl::StrAppend(&flag, " ", type);
    std::string help = opt->get_description();
    if (const std::string d = opt->get_default_str(); !d.empty() && d != "[]")
      absl::StrAppend(&help, " (default ", d, ")");
    const std::string indent(kFlagColumn, ' ');
    std::string out = flag;
    bool first = true;
    for (const std::string& line : Wrap(help, kHelpWidth - kFlagColumn)) {
      if (first && flag.size() + 1 < kFlagColumn) {
        out.append(kFlagColumn - flag.size(), ' ');
      } else {
        out += "\n" + indent;
      }
      out += line;
      first = false;
    }
    return out + "\n";
  }
};

}  // namespace

std::unique_ptr<CLI::App> MakeCommandLine(const std::string& description) {
  auto app = std::make_unique<CLI::App>(description);
  app->formatter(std::make_shared<HelpFormatter>());
  app->option_defaults()
      ->group("Flags (--flag VALUE or --flag=VALUE)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app->set_help_flag("-h,--help", "Print this text and exit.");
  app->option_defaults()->always_capture_default();
  return app;
}

absl::Status ParseCommandLine(CLI::App& app, int argc, const char* const* argv,
                              bool* help_requested) {
  *help_requested = false;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    *help_requested = true;
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  return absl::OkStatus();
}

CLI::Option* AddBoolFlag(CLI::App& app, const std::string& name, bool& value,
                         const std::string& help) {
  return app.add_option(name, value, help)
      ->check(CLI::IsMember({"true", "false", "1", "0"}).description(""))
      ->type_name("true|false")
      ->default_str(value ? "true" : "false");
}

std::string CommandLineUsage(const CLI::App& app) { return app.help(); }

}  // namespace coalesce
