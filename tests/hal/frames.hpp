// Luma frames for HAL tests: deterministic synthetic scenes and real footage (raw .gray dumps from
// scripts/fetch-footage.sh --gray, cached outside the repo).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vrex::test {

// Scene @scene (different scenes look different), moving by @t pixels: a textured background and a
// bright square that moves with t.
inline std::vector<std::uint8_t> synthetic_frame(std::uint32_t w, std::uint32_t h, std::uint32_t scene,
                                                 std::uint32_t t, std::uint32_t stride = 0)
{
    if (!stride)
        stride = w;
    std::vector<std::uint8_t> px(std::size_t{stride} * h, 0);
    std::uint32_t s = scene * 2654435761u + 12345u;
    for (std::uint32_t y = 0; y < h; y++) {
        for (std::uint32_t x = 0; x < w; x++) {
            const std::uint32_t bx = x / 16, by = y / 16;
            std::uint32_t v = (bx * 73856093u) ^ (by * 19349663u) ^ s;
            v = (v ^ (v >> 13)) * 0x5bd1e995u;
            std::uint8_t p = static_cast<std::uint8_t>((v >> 24) / 2 + (scene % 4) * 30);
            const std::uint32_t cx = (w / 4 + t * 2) % w, cy = h / 3;
            if (x >= cx && x < cx + w / 6 && y >= cy && y < cy + h / 6)
                p = 250;
            px[std::size_t{y} * stride + x] = p;
        }
    }
    return px;
}

// Frames of a raw luma dump. open() returns nullopt when the file is absent.
class Footage {
public:
    static std::optional<Footage> open(const std::string& path, std::uint32_t w, std::uint32_t h)
    {
        std::FILE* f = std::fopen(path.c_str(), "rb");
        if (!f)
            return std::nullopt;
        return Footage(f, w, h);
    }
    // vtest.gray (768x576) from $VREX_FOOTAGE_DIR or /var/cache/vrex/footage.
    static std::optional<Footage> vtest()
    {
        const char* dir = std::getenv("VREX_FOOTAGE_DIR");
        return open(std::string(dir ? dir : "/var/cache/vrex/footage") + "/vtest.gray", 768, 576);
    }
    std::uint32_t width() const { return w_; }
    std::uint32_t height() const { return h_; }
    bool read(std::uint32_t index, std::vector<std::uint8_t>& out)
    {
        out.resize(std::size_t{w_} * h_);
        if (std::fseek(f_.get(), static_cast<long>(index) * static_cast<long>(out.size()), SEEK_SET))
            return false;
        return std::fread(out.data(), 1, out.size(), f_.get()) == out.size();
    }

private:
    struct Closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    Footage(std::FILE* f, std::uint32_t w, std::uint32_t h) : f_(f), w_(w), h_(h) {}
    std::unique_ptr<std::FILE, Closer> f_;
    std::uint32_t w_, h_;
};

}  // namespace vrex::test
