// The one list of backends, in auto-selection priority order: the kernel first, so "auto" prefers a
// real device, then the emulation, which is always available. The conformance suite iterates it.
#include <array>
#include <span>

#include "emulated_backend.hpp"
#include "kernel_backend.hpp"
#include "backend.hpp"

namespace vrex {

std::span<const BackendFactory> backend_factories()
{
    static const std::array<BackendFactory, 2> list{kernel_backend_factory(), emulated_backend_factory()};
    return list;
}

const BackendFactory* find_backend_factory(std::string_view name)
{
    for (const BackendFactory& f : backend_factories())
        if (f.name == name)
            return &f;
    return nullptr;
}

}  // namespace vrex
