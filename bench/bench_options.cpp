// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "bench_options.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace vrex::bench {

namespace {

bool parse_u32(std::string_view s, uint32_t& v)
{
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
}

std::string env_or_empty(const char* name)
{
    const char* v = std::getenv(name);
    return v ? v : "";
}

}  // namespace

const char* mode_name(Mode m)
{
    switch (m) {
    case Mode::smoke: return "smoke";
    case Mode::quick: return "quick";
    case Mode::full: return "full";
    }
    return "?";
}

bool parse_options(int argc, char** argv, Options& opt)
{
    opt.gray = env_or_empty("VREX_VTEST_GRAY");
    if (!parse_u32(env_or_empty("VREX_VTEST_WIDTH"), opt.width)) opt.width = 0;
    if (!parse_u32(env_or_empty("VREX_VTEST_HEIGHT"), opt.height)) opt.height = 0;
    opt.rest.assign(argv, argv + 1);

    for (int i = 1; i < argc; i++) {
        std::string_view a = argv[i];
        auto value = [&](std::string_view key, std::string_view& v) {
            if (!a.starts_with(key)) return false;
            v = a.substr(key.size());
            return true;
        };
        std::string_view v;
        if (value("--mode=", v)) {
            if (v == "smoke") opt.mode = Mode::smoke;
            else if (v == "quick") opt.mode = Mode::quick;
            else if (v == "full") opt.mode = Mode::full;
            else {
                std::fprintf(stderr, "bench: --mode must be smoke, quick or full\n");
                return false;
            }
        } else if (value("--out=", v)) {
            opt.out = v;
        } else if (value("--gray=", v)) {
            opt.gray = v;
        } else if (value("--width=", v) || value("--height=", v)) {
            uint32_t& dst = a.starts_with("--width=") ? opt.width : opt.height;
            if (!parse_u32(v, dst)) {
                std::fprintf(stderr, "bench: bad number in %s\n", argv[i]);
                return false;
            }
        } else {
            opt.rest.emplace_back(a);
        }
    }
    return true;
}

}  // namespace vrex::bench
