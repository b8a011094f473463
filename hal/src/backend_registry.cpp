// The one list of backends. The kernel backend lives in its own files (kernel_backend.*); when its
// header is present its factory is registered ahead of the emulation, so "auto" prefers a real
// device and the conformance suite picks it up without further wiring.
#include <array>
#include <span>

#include "emulated_backend.hpp"
#include "vrex/backend.hpp"

#if __has_include("kernel_backend.hpp")
#include "kernel_backend.hpp"  // declares: const vrex::BackendFactory& vrex::kernel_backend_factory();
#define VREX_HAVE_KERNEL_BACKEND 1
#endif

namespace vrex {

std::span<const BackendFactory> backend_factories()
{
#ifdef VREX_HAVE_KERNEL_BACKEND
    static const std::array<BackendFactory, 2> list{kernel_backend_factory(), emulated_backend_factory()};
#else
    static const std::array<BackendFactory, 1> list{emulated_backend_factory()};
#endif
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
