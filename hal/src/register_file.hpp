// The command protocol of the V-Rex register file (lib/vrex_regs.h): write the ARG_* registers,
// write the opcode to CMD, read STATUS, then the RES_* registers. Everything the emulation asks of
// the reference model goes through here, exactly as a driver programs silicon.
#pragma once

#include <cstdint>
#include <functional>

extern "C" {
#include "vrex_model.h"
}

namespace vrex {

class RegisterFile {
public:
    // Accessors for one register window; the emulation binds them to vrex_model_read/_write.
    using ReadFn = std::function<std::uint32_t(std::uint32_t)>;
    using WriteFn = std::function<void(std::uint32_t, std::uint32_t)>;

    RegisterFile(ReadFn read, WriteFn write) : read_(std::move(read)), write_(std::move(write)) {}
    // Register file of an in-process reference model instance.
    explicit RegisterFile(vrex_model* model);

    std::uint32_t read(std::uint32_t off) const { return read_(off); }
    void write(std::uint32_t off, std::uint32_t val) const { write_(off, val); }

    // 64-bit values split over a LO/HI pair.
    std::uint64_t read64(std::uint32_t lo, std::uint32_t hi) const;
    void write64(std::uint32_t lo, std::uint32_t hi, std::uint64_t val) const;

    // 128-bit fingerprints over four consecutive registers (bits 32i..32i+31 at base + 4i).
    // Templates because the uAPI's __u64 and std::uint64_t are distinct types on LP64.
    template <class U>
        requires(sizeof(U) == 8)
    void write_fp(std::uint32_t base, const U (&fp)[2]) const
    {
        for (std::uint32_t i = 0; i < 4; i++)
            write(base + 4 * i, static_cast<std::uint32_t>(fp[i / 2] >> (32 * (i % 2))));
    }
    template <class U>
        requires(sizeof(U) == 8)
    void read_fp(std::uint32_t base, U (&fp)[2]) const
    {
        fp[0] = read64(base, base + 4);
        fp[1] = read64(base + 8, base + 12);
    }

    // Starts @opcode and waits for completion. Returns 0 or the errno value from STATUS.ERRNO.
    // Acknowledges the command's interrupt bits so IRQ_STATUS only carries what it reports.
    int command(std::uint32_t opcode) const;

    // Consulted before every command: a non-zero errno is returned instead of running it (the
    // emulation's hung or wedged device, EmulatedDevice::intercept_command). Empty: none.
    std::function<int(std::uint32_t opcode)> intercept;

private:
    ReadFn read_;
    WriteFn write_;
};

}  // namespace vrex
