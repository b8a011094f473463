# vrex top level: orchestration of user space (CMake, build/) and the kernel module (kernel/).
# `make demo` runs the main job, `make test` runs every test. Both install their packages first.

BUILD     ?= build
JOBS      ?= $(shell nproc)
KDIR      ?= /lib/modules/$(shell uname -r)/build
CMAKE_ARGS ?=
# ccache (scripts/deps.sh installs it) for the CMake trees; paths relative to the checkout, so another
# clone of the same sources hits the same cache entries.
CCACHE_ARGS := $(if $(shell command -v ccache),-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: all deps build configure unit test demo module module-clean qemu-test lint bench bench-quick \
	fuzz fuzz-kernel soak sanitize defconfig menuconfig clean help model model-ship model-reproduce deb deb-install-test

all: build

help:
	@echo "make deps        install the Debian packages vrex needs (idempotent, root)"
	@echo "make build       user space into $(BUILD)/, kernel/vrex.ko when headers are present"
	@echo "make unit        ctest (lib, uapi, HAL conformance on the emulation, tools)"
	@echo "make test        every test; ends with 'N passed, N failed'"
	@echo "make demo        V-Rex on real footage (builds only vrexctl and the Python extension)"
	@echo "make deb         Debian packages (debian/) for amd64 and arm64 into build/deb/ (docs/install.md)"
	@echo "make deb-install-test  the amd64 and arm64 packages in clean bookworm roots, booted in QEMU"
	@echo "make qemu-test   vrex.ko in QEMU: Debian 6.12/6.1/5.10 amd64, 6.12/5.10 arm64, a debug 6.1"
	@echo "                 (KASAN, lockdep, kmemleak; built once into /var/cache/vrex), 5.15 arm64 compile;"
	@echo "                 vrex.ko on the QEMU device model (qemu/): pci 6.12/5.10 amd64, unplug, dt 6.12/5.10 arm64"
	@echo "make cross-arm64 user space cross-built for arm64 into build-arm64/ (docs/install.md)"
	@echo "make lint        checkpatch --strict, sparse, W=1, dt-validate, clang-tidy"
	@echo "make model       the builtin video transformer's weights (the committed ones or trained; cached)"
	@echo "make model-ship  write this tree's weights to model/weights/ (after editing the model's code)"
	@echo "make bench       benchmarks against FAISS / vLLM-style baseline (not a test)"

deps:
	@bash scripts/deps.sh
	@bash scripts/fetch-encoder.sh >/dev/null

# The builtin model's weights (model/vrex/train.py), cached under /var/cache/vrex/model by a hash of
# the training code, encoder and train/val clips (manifest.json beside them); a no-op when cached.
# A fresh cache takes the committed set in model/weights/ (sha256-verified against its manifest)
# when it was trained for this tree's hash, and trains otherwise, printing which input changed.
# model-ship: write this tree's weights to model/weights/ (retrain after an edit of
# model/vrex/{train,task,decoder,footage,tfjs}.py, then commit model/weights/);
# model-reproduce: retrain from scratch and compare with model/weights/ (about 4 min of CPU).
model: build
	PYTHONPATH=$(BUILD)/model:model OPENBLAS_NUM_THREADS=1 /usr/bin/python3 -m vrex.train

model-ship model-reproduce: deps
	PYTHONPATH=model OPENBLAS_NUM_THREADS=1 /usr/bin/python3 -m vrex.train --$(subst model-,,$@)

# Kconfig: the same symbols drive Kbuild and CMake.
defconfig menuconfig: deps
	@bash scripts/kconfig.sh $@

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -G Ninja $(CCACHE_ARGS) $(CMAKE_ARGS)

configure: deps
	@[ -f .config ] || bash scripts/kconfig.sh defconfig
	cmake -S . -B $(BUILD) -G Ninja $(CCACHE_ARGS) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)
	@if [ -d "$(KDIR)" ] && [ -f kernel/Kbuild ]; then $(MAKE) module; \
	else echo "build: no kernel headers at $(KDIR); skipping vrex.ko (make qemu-test builds it for the test kernels)"; fi

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel modules

module-clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel clean

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test: deps
	@bash scripts/run-tests.sh

# The guests run the HAL suites and the soak program from build/: build user space first, so a fresh
# clone's `make qemu-test` (or fuzz-kernel) finds every guest program.
# KERNELS="5.10-amd64 debug-6.1-amd64 ..." limits the run to those guests (default: all).
qemu-test: build
	@bash scripts/qemu-test.sh $(foreach k,$(KERNELS),--kernel $(k))

lint: deps
	@bash scripts/lint.sh

# A newcomer's first figure: configure, then build only what the demo runs (vrexctl and the Python
# extension of its model step; no tests, examples, benchmarks or kernel module). `make build` and
# `make test` still build everything.
demo: configure
	@bash scripts/demo.sh --build

# Debian packages: vrex-dkms, libvrex-hal1, libvrex-hal-dev, vrexctl, python3-vrex, vrex-dt-overlays
# for amd64, and the arch-dependent ones cross-built for arm64 (DEB_ARCHES="amd64" for one), into
# build/deb/<arch>/; lintian must report no errors.
DEB_ARCHES ?= amd64 arm64
deb: deps
	@bash scripts/deb.sh $(foreach a,$(DEB_ARCHES),--arch $(a))

# The install test (also a stage of `make test`): tests/install/deb-install.sh, amd64 then arm64
# (VREX_DEB_INSTALL_ARCHES="amd64" for one); it reuses the .debs `make deb` built from the same source.
deb-install-test: deps
	@bash tests/install/deb-install.sh

bench: build
	@bash scripts/bench.sh full

bench-quick: build
	@bash scripts/bench.sh quick

fuzz: deps
	@bash scripts/fuzz.sh long

fuzz-kernel: build
	@bash scripts/qemu-test.sh --fuzz $${FUZZ_SECONDS:-300}

soak: build
	@bash scripts/soak.sh long

# Cross build for arm64 (Jetson Orin, RK3588): sysroot, toolchain file, build-arm64/.
.PHONY: cross-arm64
cross-arm64: deps
	@bash scripts/cross-arm64.sh all

clean:
	rm -rf $(BUILD) build-arm64
	@if [ -d "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(CURDIR)/kernel clean >/dev/null 2>&1 || true; fi
