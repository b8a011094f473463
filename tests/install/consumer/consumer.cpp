// Minimal engine integration against the installed libvrex-hal: one stream, a few frames, one block per
// region, a temporal retrieval of the previous frame's block. Exits non-zero on any unexpected result.
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <vector>
#include <vrex/async.hpp>
#include <vrex/hal.hpp>

int main() {
    vrex::DeviceOptions options;
    options.backend = vrex::BackendChoice::emulated;
    auto device = vrex::Device::open(options);
    if (!device) {
        std::fprintf(stderr, "open: %s\n", device.error().message().c_str());
        return 1;
    }
    vrex::ModelGeometry geometry;
    geometry.layers = 2;
    geometry.kv_heads = 2;
    geometry.head_dim = 64;
    geometry.dtype = vrex::DType::fp16;
    geometry.tokens_per_block = 16;
    auto allocator = vrex::KvAllocator::create(*device, geometry);
    if (!allocator) return 2;
    auto stream = (*allocator)->create_stream();
    if (!stream) return 3;
    std::vector<std::uint8_t> luma(128 * 96);
    for (int frame = 0; frame < 3; ++frame) {
        for (std::size_t i = 0; i < luma.size(); ++i) luma[i] = static_cast<std::uint8_t>(i * 7 + frame);
        if (!(*stream)->begin_frame({luma.data(), 128, 96, 128})) return 4;
        if (!(*stream)->allocate(0)) return 5;
        if (frame > 0) {
            auto r = (*stream)->retrieve_temporal(0, -1);
            if (!r || !r->hit) return 6;
        }
        if (!(*stream)->end_frame()) return 7;
    }
    // vrex/async.hpp: the package's Boost dependency reaches this build (vrexConfig.cmake).
    boost::asio::io_context io;
    auto async = vrex::AsyncDevice::create(*device, io);
    if (!async) return 8;
    std::printf("consumer_cpp: ok on %s\n", std::string((*device)->backend_name()).c_str());
    return 0;
}
