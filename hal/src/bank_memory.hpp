// Host memory standing in for the device's banks. The whole bank space is one reserved mapping
// (device address = offset into it, what the reference model reads luma from); every BO is its own
// memfd mapped over its range, so bo_map() views, exported fds and the model's view share pages.
// Past the banks, @tail_bytes of plain device memory that no BO can be placed in (the emulated
// driver's staging area for lookup batches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "vrex/result.hpp"

namespace vrex {

class BankMemory {
public:
    BankMemory(std::uint32_t nbanks, std::uint64_t bank_size, std::uint64_t tail_bytes = 0);
    ~BankMemory();
    BankMemory(const BankMemory&) = delete;
    BankMemory& operator=(const BankMemory&) = delete;

    bool ok() const noexcept { return base_ != nullptr; }
    std::byte* base() const noexcept { return base_; }
    std::uint64_t size() const noexcept { return size_; }
    // Device address of the memory past the banks (size() - tail_addr() bytes of it).
    std::uint64_t tail_addr() const noexcept { return banks_size_; }

    struct Extent {
        std::uint64_t addr;  // device address
        std::uint64_t size;
        std::uint32_t bank;
        int memfd;           // owned by BankMemory until release()
    };

    // Places @size bytes (a multiple of the page size) in the lowest bank of @bank_mask with room
    // (first fit, lowest address). ENOSPC when no bank has room.
    Result<Extent> allocate(std::uint64_t size, std::uint64_t bank_mask);
    void release(const Extent& e);

    std::uint64_t used_bytes(std::uint32_t bank) const { return used_[bank]; }

private:
    std::byte* base_ = nullptr;
    std::uint64_t size_ = 0;
    std::uint64_t banks_size_ = 0;
    std::uint64_t bank_size_ = 0;
    std::vector<std::map<std::uint64_t, std::uint64_t>> free_;  // per bank: offset -> length
    std::vector<std::uint64_t> used_;
};

}  // namespace vrex
