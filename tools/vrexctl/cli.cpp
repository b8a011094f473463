#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <stdexcept>

namespace vrexctl {

Option& Option::show_default() {
    o_->capture_default_str();
    return *this;
}

Option& Option::required() {
    o_->required();
    return *this;
}

Option& Option::range(int lo, int hi) {
    o_->check(CLI::Range(lo, hi));
    return *this;
}

Option& Option::range(double lo, double hi) {
    o_->check(CLI::Range(lo, hi));
    return *this;
}

Option& Option::one_of(std::vector<std::string> values) {
    o_->check(CLI::IsMember(std::move(values)));
    return *this;
}

Command Command::subcommand(const std::string& name, const std::string& help) {
    return Command(a_->add_subcommand(name, help));
}

Option Command::option(const std::string& name, std::string& value, const std::string& help) {
    return Option(a_->add_option(name, value, help));
}

Option Command::option(const std::string& name, std::uint32_t& value, const std::string& help) {
    return Option(a_->add_option(name, value, help));
}

Option Command::option(const std::string& name, double& value, const std::string& help) {
    return Option(a_->add_option(name, value, help));
}

Option Command::option(const std::string& name, std::vector<std::string>& values, const std::string& help) {
    return Option(a_->add_option(name, values, help));
}

void Command::flag(const std::string& name, bool& value, const std::string& help) {
    a_->add_flag(name, value, help);
}

void Command::callback(std::function<void()> fn) {
    a_->callback(std::move(fn));
}

struct CommandLine::Impl {
    CLI::App app;
    std::exception_ptr usage;  // the CLI::ParseError of the last parse()

    explicit Impl(const std::string& description) : app(description) {}

    // Calls @fn with the stored error as the CLI::ParseError (subclass intact) it was thrown as.
    template <typename Fn>
    auto with_usage(Fn fn) const {
        if (!usage) throw std::logic_error("vrexctl: no usage error to report (parse() succeeded)");
        try {
            std::rethrow_exception(usage);
        } catch (const CLI::ParseError& e) {
            return fn(e);
        }
    }
};

CommandLine::CommandLine(const std::string& description) : impl_(std::make_unique<Impl>(description)) {
    impl_->app.require_subcommand(1);
    impl_->app.fallthrough();
}

CommandLine::~CommandLine() = default;

Command CommandLine::root() {
    return Command(&impl_->app);
}

bool CommandLine::parse(int argc, char** argv) {
    impl_->usage = nullptr;
    try {
        impl_->app.parse(argc, argv);
    } catch (const CLI::ParseError&) {
        impl_->usage = std::current_exception();
        return false;
    }
    return true;
}

int CommandLine::usage_exit_code() const {
    return impl_->with_usage([](const CLI::ParseError& e) { return e.get_exit_code(); });
}

std::string CommandLine::usage_message() const {
    return impl_->with_usage([](const CLI::ParseError& e) { return std::string(e.what()); });
}

int CommandLine::print_usage() const {
    return impl_->with_usage([this](const CLI::ParseError& e) { return impl_->app.exit(e); });
}

}  // namespace vrexctl
