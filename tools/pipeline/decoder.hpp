// Video decoding with FFmpeg (libavformat + libavcodec + libswscale): any container and codec FFmpeg
// reads, H.264 included. Frames come out as packed 8-bit luma at the video's own size (swscale to
// GRAY8, so any pixel format works). RAII owns every FFmpeg object.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "luma.hpp"

namespace vrex::pipeline {

class VideoDecoder {
  public:
    // Failure(bad_input) when the file cannot be opened, has no video stream or no decoder.
    explicit VideoDecoder(const std::string& path);
    ~VideoDecoder();
    VideoDecoder(const VideoDecoder&) = delete;
    VideoDecoder& operator=(const VideoDecoder&) = delete;

    // The next frame into @out (reusing its buffer); false at end of stream. Failure(bad_input) on a
    // decoding error.
    bool next(LumaFrame& out);

    std::uint32_t width() const noexcept;
    std::uint32_t height() const noexcept;
    // Frame count from the container (0 when it does not say).
    std::uint64_t frame_count_hint() const noexcept;
    double fps() const noexcept;
    std::string codec_name() const;
    const std::string& path() const noexcept { return path_; }

  private:
    struct Impl;
    std::string path_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vrex::pipeline
