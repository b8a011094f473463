#include "register_file.hpp"

#include <cerrno>

namespace vrex {

RegisterFile::RegisterFile(vrex_model* model)
    : RegisterFile([model](std::uint32_t off) { return vrex_model_read(model, off); },
                   [model](std::uint32_t off, std::uint32_t val) { vrex_model_write(model, off, val); })
{
}

std::uint64_t RegisterFile::read64(std::uint32_t lo, std::uint32_t hi) const
{
    const std::uint64_t l = read(lo);
    return (std::uint64_t{read(hi)} << 32) | l;
}

void RegisterFile::write64(std::uint32_t lo, std::uint32_t hi, std::uint64_t val) const
{
    write(lo, static_cast<std::uint32_t>(val));
    write(hi, static_cast<std::uint32_t>(val >> 32));
}

int RegisterFile::command(std::uint32_t opcode) const
{
    if (intercept)
        if (const int e = intercept(opcode))
            return e;
    write(VREX_REG_CMD, opcode);
    // The reference model completes synchronously; silicon would be polled (or interrupt-driven)
    // here. A STATUS that never leaves BUSY is a dead device, which the model cannot produce.
    const std::uint32_t status = read(VREX_REG_STATUS);
    write(VREX_REG_IRQ_STATUS, VREX_IRQ_CMD_DONE | VREX_IRQ_CMD_ERROR);
    if (status & VREX_STATUS_ERROR) {
        const int err = static_cast<int>((status & VREX_STATUS_ERRNO_MASK) >> VREX_STATUS_ERRNO_SHIFT);
        return err ? err : EIO;
    }
    if (!(status & VREX_STATUS_DONE))
        return EIO;
    return 0;
}

}  // namespace vrex
