// The backends the conformance suite runs on: every registered backend that is available here
// (the emulation always; the kernel backend when a vrex device node exists).
#pragma once

#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "backend.hpp"
#include "frames.hpp"

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

// Stages the synthetic 160x120 frame (@scene, moved by @t) in the buffer @handle and submits it on
// stream @s. @args receives what was submitted (the backend fills in the frame's results).
inline std::error_code submit_synthetic_frame(Backend& be, std::uint32_t s, std::uint32_t handle,
                                              std::uint32_t scene, std::uint32_t t,
                                              drm_vrex_frame_submit& args)
{
    const auto px = synthetic_frame(160, 120, scene, t);
    auto map = be.bo_map(handle);
    if (!map)
        return map.error();
    if (map->size() < px.size())
        return std::make_error_code(std::errc::no_buffer_space);
    std::memcpy(map->data(), px.data(), px.size());
    args = {};
    args.stream = s;
    args.handle = handle;
    args.width = 160;
    args.height = 120;
    args.stride = 160;
    return be.frame_submit(args);
}

}  // namespace vrex::test
