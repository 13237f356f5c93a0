#include "base/command_line.h"

#include <cstdio>
#include <memory>
#include <optional>
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
    std::string flag = absl::StrCat(
        "  ", positional ? opt->get_name(true) : opt->get_name(false, true));
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

std::optional<int> ParseCommandLineOrExit(CLI::App& app, int argc,
                                          const char* const* argv,
                                          const char* program,
                                          int error_exit_code) {
  bool help = false;
  if (absl::Status s = ParseCommandLine(app, argc, argv, &help); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n\n%s", program,
                 std::string(s.message()).c_str(), app.help().c_str());
    return error_exit_code;
  }
  if (!help) return std::nullopt;
  std::fputs(app.help().c_str(), stdout);
  return 0;
}

CLI::Option* AddBoolFlag(CLI::App& app, const std::string& name, bool& value,
                         const std::string& help) {
  return app.add_option(name, value, help)
      ->check(CLI::IsMember({"true", "false", "1", "0"}).description(""))
      ->type_name("true|false")
      ->default_str(value ? "true" : "false");
}

CLI::Option* AddOptionWith(
    CLI::App& app, const std::string& name,
    std::function<absl::Status(const std::string&)> apply,
    const std::string& help, bool repeatable) {
  CLI::Option* option = app.add_option_function<std::vector<std::string>>(
      name,
      [apply = std::move(apply)](const std::vector<std::string>& values) {
        for (const std::string& v : values) {
          if (absl::Status s = apply(v); !s.ok()) {
            throw CLI::ValidationError(std::string(s.message()));
          }
        }
      },
      help);
  option->allow_extra_args(false)->type_size(1);
  if (repeatable) option->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return option;
}

std::string CommandLineUsage(const CLI::App& app) { return app.help(); }

}  // namespace coalesce
