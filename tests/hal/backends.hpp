// The backends the conformance suite runs on: every registered backend that is available here
// (the emulation always; the kernel backend when a vrex device node exists).
#pragma once

#include <string>
#include <vector>

#include "backend.hpp"

namespace vrex::test {

inline std::vector<std::string> available_backends()
{
    std::vector<std::string> names;
    for (const BackendFactory& f : backend_factories())
        if (f.available())
            names.emplace_back(f.name);
    return names;
}

inline std::unique_ptr<Backend> open_backend(const std::string& name)
{
    const BackendFactory* f = find_backend_factory(name);
    if (!f)
        return nullptr;
    auto b = f->open(BackendOptions{});
    return b ? std::move(*b) : nullptr;
}

}  // namespace vrex::test
