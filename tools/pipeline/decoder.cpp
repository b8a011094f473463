#include "decoder.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include <cstring>

#include "error.hpp"

namespace vrex::pipeline {
namespace {

std::string av_error(int err) {
    char buf[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(err, buf, sizeof(buf));
    return buf;
}

struct FormatCloser {
    void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
struct CodecFreer {
    void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFreer {
    void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFreer {
    void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsFreer {
    void operator()(SwsContext* s) const { sws_freeContext(s); }
};

}  // namespace

struct VideoDecoder::Impl {
    std::unique_ptr<AVFormatContext, FormatCloser> fmt;
    std::unique_ptr<AVCodecContext, CodecFreer> codec;
    std::unique_ptr<AVFrame, FrameFreer> frame;
    std::unique_ptr<AVPacket, PacketFreer> packet;
    std::unique_ptr<SwsContext, SwsFreer> sws;
    int stream_index = -1;
    bool flushing = false;
    bool done = false;
    AVPixelFormat sws_format = AV_PIX_FMT_NONE;
    int sws_w = 0, sws_h = 0;
};

VideoDecoder::VideoDecoder(const std::string& path) : path_(path), impl_(std::make_unique<Impl>()) {
    auto bad = [&](const std::string& why) { throw Failure(FailureKind::bad_input, path + ": " + why); };
    AVFormatContext* raw = nullptr;
    if (int e = avformat_open_input(&raw, path.c_str(), nullptr, nullptr); e < 0)
        bad("not a video file FFmpeg can read (" + av_error(e) + ")");
    impl_->fmt.reset(raw);
    if (int e = avformat_find_stream_info(raw, nullptr); e < 0)
        bad("cannot read stream info (" + av_error(e) + ")");
    const AVCodec* dec = nullptr;
    impl_->stream_index = av_find_best_stream(raw, AVMEDIA_TYPE_VIDEO, -1, -1, &dec, 0);
    if (impl_->stream_index < 0 || !dec) bad("no decodable video stream (not a video file?)");
    impl_->codec.reset(avcodec_alloc_context3(dec));
    if (!impl_->codec) throw Failure(FailureKind::runtime, "out of memory");
    if (int e =
            avcodec_parameters_to_context(impl_->codec.get(), raw->streams[impl_->stream_index]->codecpar);
        e < 0)
        bad("bad codec parameters (" + av_error(e) + ")");
    // One decoding thread per stream: the pipeline runs several streams, the machine has few cores.
    impl_->codec->thread_count = 1;
    if (int e = avcodec_open2(impl_->codec.get(), dec, nullptr); e < 0)
        bad("cannot open decoder " + std::string(dec->name) + " (" + av_error(e) + ")");
    if (impl_->codec->width <= 0 || impl_->codec->height <= 0) bad("video has no size");
    impl_->frame.reset(av_frame_alloc());
    impl_->packet.reset(av_packet_alloc());
    if (!impl_->frame || !impl_->packet) throw Failure(FailureKind::runtime, "out of memory");
}

VideoDecoder::~VideoDecoder() = default;

std::uint32_t VideoDecoder::width() const noexcept {
    return static_cast<std::uint32_t>(impl_->codec->width);
}
std::uint32_t VideoDecoder::height() const noexcept {
    return static_cast<std::uint32_t>(impl_->codec->height);
}

std::uint64_t VideoDecoder::frame_count_hint() const noexcept {
    const AVStream* s = impl_->fmt->streams[impl_->stream_index];
    return s->nb_frames > 0 ? static_cast<std::uint64_t>(s->nb_frames) : 0;
}

double VideoDecoder::fps() const noexcept {
    const AVRational r = impl_->fmt->streams[impl_->stream_index]->avg_frame_rate;
    return r.den ? av_q2d(r) : 0.0;
}

std::string VideoDecoder::codec_name() const {
    return impl_->codec->codec ? impl_->codec->codec->name : "?";
}

bool VideoDecoder::next(LumaFrame& out) {
    Impl& d = *impl_;
    while (!d.done) {
        const int r = avcodec_receive_frame(d.codec.get(), d.frame.get());
        if (r == 0) {
            const AVFrame& f = *d.frame;
            const auto fmt = static_cast<AVPixelFormat>(f.format);
            if (!d.sws || fmt != d.sws_format || f.width != d.sws_w || f.height != d.sws_h) {
                d.sws.reset(sws_getContext(f.width, f.height, fmt, f.width, f.height, AV_PIX_FMT_GRAY8,
                                           SWS_POINT, nullptr, nullptr, nullptr));
                if (!d.sws) throw Failure(FailureKind::bad_input, path_ + ": unsupported pixel format");
                d.sws_format = fmt;
                d.sws_w = f.width;
                d.sws_h = f.height;
            }
            out.width = static_cast<std::uint32_t>(f.width);
            out.height = static_cast<std::uint32_t>(f.height);
            out.px.resize(std::size_t{out.width} * out.height);
            std::uint8_t* dst[4] = {out.px.data(), nullptr, nullptr, nullptr};
            int dst_stride[4] = {f.width, 0, 0, 0};
            sws_scale(d.sws.get(), f.data, f.linesize, 0, f.height, dst, dst_stride);
            av_frame_unref(d.frame.get());
            return true;
        }
        if (r == AVERROR_EOF) {
            d.done = true;
            break;
        }
        if (r != AVERROR(EAGAIN))
            throw Failure(FailureKind::bad_input, path_ + ": decoding failed (" + av_error(r) + ")");
        if (d.flushing) continue;
        // Feed the decoder: the next packet of our stream, or a flush at end of file.
        for (;;) {
            const int rd = av_read_frame(d.fmt.get(), d.packet.get());
            if (rd < 0) {
                avcodec_send_packet(d.codec.get(), nullptr);
                d.flushing = true;
                break;
            }
            const bool ours = d.packet->stream_index == d.stream_index;
            int sent = 0;
            if (ours) sent = avcodec_send_packet(d.codec.get(), d.packet.get());
            av_packet_unref(d.packet.get());
            if (sent < 0 && sent != AVERROR(EAGAIN) && sent != AVERROR_INVALIDDATA)
                throw Failure(FailureKind::bad_input, path_ + ": decoding failed (" + av_error(sent) + ")");
            if (ours) break;
        }
    }
    return false;
}

}  // namespace vrex::pipeline
