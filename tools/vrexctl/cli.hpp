// vrexctl's command line as its subcommands declare it. CLI11 is header-only (Debian ships no
// compiled part) and costs every translation unit that includes it 15-20 CPU-s at -O3, its global
// validators included; behind this interface only cli.cpp compiles it.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace vrexctl {

// One option, for the checks CLI11 applies to its value when it is given.
class Option {
  public:
    Option& show_default();  // the help shows the variable's value at declaration
    Option& required();
    Option& range(int lo, int hi);  // bounds, inclusive
    Option& range(double lo, double hi);
    Option& one_of(std::vector<std::string> values);

  private:
    friend class Command;
    explicit Option(CLI::Option* o) : o_(o) {}
    CLI::Option* o_;
};

// The main command or a subcommand. A handle: the CommandLine owns what it points to. Variables
// bound to options must outlive parsing.
class Command {
  public:
    Command subcommand(const std::string& name, const std::string& help);
    Option option(const std::string& name, std::string& value, const std::string& help);
    Option option(const std::string& name, std::uint32_t& value, const std::string& help);
    Option option(const std::string& name, double& value, const std::string& help);
    Option option(const std::string& name, std::vector<std::string>& values, const std::string& help);
    void flag(const std::string& name, bool& value, const std::string& help);
    // Runs after a successful parse when this subcommand was given.
    void callback(std::function<void()> fn);

  private:
    friend class CommandLine;
    explicit Command(CLI::App* a) : a_(a) {}
    CLI::App* a_;
};

class CommandLine {
  public:
    // One subcommand is required; options the subcommand does not know fall through to the main
    // command, so global options may stand after it.
    explicit CommandLine(const std::string& description);
    ~CommandLine();
    CommandLine(const CommandLine&) = delete;
    CommandLine& operator=(const CommandLine&) = delete;

    Command root();

    // Parses @argv and runs the chosen subcommand's callback; whatever that throws propagates. False
    // when the command line was not run: --help or a usage error (see usage_*()).
    bool parse(int argc, char** argv);
    // After parse() returned false: 0 for --help, else CLI11's error code; the message.
    int usage_exit_code() const;
    std::string usage_message() const;
    // Prints it as CLI11 does (help on stdout, an error and a hint on stderr) and returns
    // usage_exit_code().
    int print_usage() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vrexctl
