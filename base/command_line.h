// The command line of every Coalesce binary: flags declared on a CLI11 app
// (libcli11-dev), parsed here into an absl::Status, with --help generated
// from the declarations.
//
// Why CLI11 rather than Abseil's flags library: coalesce-server takes
// Triton's flags, which are dashed (--model-repository) and whose booleans
// take a value as a separate argument (--allow-metrics false). Abseil's flag
// names must be C++ identifiers and its booleans never take a separate
// value, so a Triton command line would need rewriting before Abseil saw it,
// and its --help would print names the binary does not accept.
// Accepted forms: --flag=value and --flag value; single-dash short names
// where a binary declares them (coalesce-bench's perf_analyzer ones).
//
// Functions are thread-compatible (an app is parsed once, at start-up).
#ifndef COALESCE_BASE_COMMAND_LINE_H_
#define COALESCE_BASE_COMMAND_LINE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"

namespace coalesce {

// A CLI11 app set up the same way for every binary: --help shows
// `description` (which should carry the usage line), then each flag with its
// type, its help wrapped to 80 columns and its default. Declare choices and
// ranges with checks whose description is empty (CLI::Range(..)
// .description("")): the type name says what the flag takes. A flag given
// twice keeps its last value, as Triton's do; a repeatable flag (a vector)
// must say multi_option_policy(TakeAll) and allow_extra_args(false).
std::unique_ptr<CLI::App> MakeCommandLine(const std::string& description);

// Parses argv into the options declared on `app`. OK with *help_requested
// set when -h/--help is given (nothing else is checked then). Otherwise
// InvalidArgument with CLI11's message, which names the flag: an unknown
// flag, a missing or malformed value, a value a check refuses, a missing
// required flag, a stray argument.
absl::Status ParseCommandLine(CLI::App& app, int argc, const char* const* argv,
                              bool* help_requested);

// ParseCommandLine for a main(): nullopt when the program should go on;
// otherwise the exit code, after printing the usage to stdout (--help: 0)
// or "`program`: <error>" and the usage to stderr (`error_exit_code`).
std::optional<int> ParseCommandLineOrExit(CLI::App& app, int argc,
                                          const char* const* argv,
                                          const char* program,
                                          int error_exit_code);

// A boolean flag written as Triton writes them: --name=true, --name false
// (true, false, 1 or 0; anything else is refused). Its default is `value`.
CLI::Option* AddBoolFlag(CLI::App& app, const std::string& name, bool& value,
                         const std::string& help);

// An option whose every value goes to `apply`, which stores it; a non-OK
// status refuses the command line with the status's message (which should
// name the flag). With `repeatable`, every occurrence is applied in order
// (--input a=1 --input b=2); otherwise the last one counts.
CLI::Option* AddOptionWith(
    CLI::App& app, const std::string& name,
    std::function<absl::Status(const std::string&)> apply,
    const std::string& help, bool repeatable = false);

// The --help text of `app`.
std::string CommandLineUsage(const CLI::App& app);

}  // namespace coalesce

#endif  // COALESCE_BASE_COMMAND_LINE_H_
