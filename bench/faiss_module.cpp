// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include <dlfcn.h>

#include "faiss_indexes.h"

namespace vrex::bench {

bool FaissConfig::exact_at(uint32_t radius) const {
    switch (kind) {
        case FaissKind::flat:
            return true;
        case FaissKind::hash:
            return nflip >= b;
        case FaissKind::multihash:
            return nhash * b <= 128 && static_cast<uint32_t>(nhash * (nflip + 1)) > radius;
    }
    return false;
}

std::string FaissConfig::describe() const {
    switch (kind) {
        case FaissKind::flat:
            return "IndexBinaryFlat";
        case FaissKind::hash:
            return "IndexBinaryHash(b=" + std::to_string(b) + ",nflip=" + std::to_string(nflip) + ")";
        case FaissKind::multihash:
            return "IndexBinaryMultiHash(nhash=" + std::to_string(nhash) + ",b=" + std::to_string(b) +
                   ",nflip=" + std::to_string(nflip) + ")";
    }
    return "?";
}

FaissModule::FaissModule(std::string name, const std::string& path) : name_(std::move(name)) {
    if (path.empty()) {
        why_ = "no module path";
        return;
    }
    // RTLD_LOCAL: the two builds define the same FAISS symbols; each module binds its own (they are
    // hidden and the module is linked -Bsymbolic), none leaks into the global scope.
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
        const char* e = dlerror();
        why_ = std::string("dlopen ") + path + ": " + (e ? e : "unknown error");
        return;
    }
    auto factory = reinterpret_cast<FaissBuildFactory>(dlsym(handle_, VREX_FAISS_FACTORY));
    if (!factory) {
        why_ = path + ": no " VREX_FAISS_FACTORY " symbol";
        return;
    }
    build_.reset(factory());
    if (!build_) why_ = path + ": factory returned nothing";
}

FaissModule::~FaissModule() {
    // The object's code lives in the module: destroy it first. The module itself stays mapped: FAISS and
    // libgomp keep static state (thread pools, TLS destructors) that must not vanish before exit.
    build_.reset();
}

}  // namespace vrex::bench
