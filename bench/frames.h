// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Luma frames for the benchmarks: real footage dumped by scripts/fetch-footage.sh --gray (8-bit frames
// back to back, no header), or a deterministic synthetic sequence when no footage is available (smoke
// tests), plus a bilinear resize to bring either to the resolutions under test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace vrex::bench {

struct Frame {
    uint32_t width = 0;
    uint32_t height = 0;
    std::vector<uint8_t> pix;  // width * height, stride == width
};

class GrayClip {
public:
    // Fails (ok() == false) when the file is missing, unreadable or not a whole number of frames.
    GrayClip(const std::string& path, uint32_t width, uint32_t height);

    bool ok() const { return frames_ > 0; }
    size_t frames() const { return frames_; }
    uint32_t width() const { return width_; }
    uint32_t height() const { return height_; }
    Frame read(size_t index);

private:
    std::ifstream in_;
    uint32_t width_;
    uint32_t height_;
    size_t frames_ = 0;
};

// A static textured background with moving objects and a scene change every @scene_len frames, so
// fingerprints cluster within a scene and differ across scenes, like surveillance footage.
Frame synthetic_frame(uint32_t width, uint32_t height, uint32_t index, uint32_t scene_len = 40);

Frame resize_bilinear(const Frame& src, uint32_t width, uint32_t height);

}  // namespace vrex::bench
