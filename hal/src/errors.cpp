#include "vrex/errors.hpp"

#include <string>

namespace vrex {
namespace {

class HalCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "vrex"; }
    std::string message(int ev) const override
    {
        switch (static_cast<errc>(ev)) {
        case errc::device_lost:
            return "vrex device lost (removed, reset or failed); reopen the device";
        case errc::no_device:
            return "no vrex device found (load vrex.ko or use the emulated backend)";
        case errc::unknown_backend:
            return "unknown vrex backend name (expected auto, kernel or emulated)";
        case errc::not_vrex_device:
            return "the DRM node is not driven by vrex";
        case errc::bad_geometry:
            return "invalid model geometry";
        case errc::not_in_frame:
            return "operation needs an open frame (call begin_frame first)";
        case errc::stale_handle:
            return "stale KV block handle: the block was released (its id may belong to another block now)";
        }
        return "unknown vrex error " + std::to_string(ev);
    }
};

}  // namespace

const std::error_category& hal_category() noexcept
{
    static const HalCategory category;
    return category;
}

}  // namespace vrex
