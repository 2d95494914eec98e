# The two commands of the README, plus the pieces they are made of.
# Every target does its own set-up first (idempotent: done steps are skipped).

BUILD_DIR ?= build
JOBS ?= 2
# ctest runs one test more than the cores: many tests mostly wait (start-up,
# rendezvous, signals, SLURM's timer), and a third one fills that time.
TEST_JOBS ?= 3
CMAKE_ARGS ?=
SHELL := /bin/bash

.PHONY: all setup setup-demo configure configure-demo build demo test bench bench-check clean

all: build

## Set-up in two stages: the demo's (LibTorch, the digits) and the tests' (the peers they compare with).
setup:
	@bash scripts/setup.sh

setup-demo:
	@bash scripts/setup.sh demo

# The compilers: Clang where set-up installed it. With a precompiled header
# Clang instantiates LibTorch's templates once, in the header; GCC does it
# again in every unit (about 12 s each), and a cold build took twice the CPU
# time (docs/development.md). `make FULGUR_CXX=g++ FULGUR_CC=gcc` builds with
# GCC; both are supported. C and C++ from one family: CMake 3.25 keeps one
# precompiled header suffix for both, the last enabled language's.
# Evaluated when configuring, after set-up.
FULGUR_CXX ?= $(shell command -v clang++)
FULGUR_CC ?= $(shell command -v clang)
CONFIGURE = if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
  cmake -S . -B $(BUILD_DIR) -G Ninja $(if $(FULGUR_CXX),-DCMAKE_CXX_COMPILER=$(FULGUR_CXX)) \
    $(if $(FULGUR_CC),-DCMAKE_C_COMPILER=$(FULGUR_CC)) $(CMAKE_ARGS); fi

configure: setup
	@$(CONFIGURE)

configure-demo: setup-demo
	@$(CONFIGURE)

## A compiler warning fails the build (a fresh build of every target has none).
build: configure
	@set -o pipefail; cmake --build $(BUILD_DIR) -j$(JOBS) 2>&1 | tee $(BUILD_DIR)/build.log
	@if grep -n "warning:" $(BUILD_DIR)/build.log; then \
	  echo "error: the build printed the compiler warnings above; fix them"; exit 1; fi

## Trains the default example (digits in the CINIC-10 layout) and tests it.
## The CUDA module is built too only where a CUDA driver could load it.
demo: configure-demo
	@targets=cinic10; \
	if ldconfig -p | grep -q 'libcuda\.so\.1 ' && grep -q '^build fulgur_cuda:' $(BUILD_DIR)/build.ninja; then \
	  targets="$$targets fulgur_cuda"; \
	fi; \
	cmake --build $(BUILD_DIR) -j$(JOBS) --target $$targets
	@bash scripts/demo.sh $(BUILD_DIR)

## Builds and runs the whole test suite through ctest.
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j$(TEST_JOBS) --timeout 900

## Runs every benchmark; results go to stdout (record them in bench/RESULTS.md).
bench: build
	@bash scripts/bench.sh $(BUILD_DIR)

## Measures the headline ratios again (median of alternating pairs) and
## compares them with bench/RESULTS.md's "Regression check" table.
bench-check: build
	@.venv/bin/python bench/regression_check.py $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)

## The release tarball fulgur-<version>.tar.gz of HEAD and its sha256 in
## build/dist (scripts/make_dist.sh; DIST_ARGS="--ref v0.1.0"; a release: make release).
.PHONY: dist
dist:
	@bash scripts/make_dist.sh $(DIST_ARGS)

## A release (docs/development.md, "Making a release"), after the tag vX.Y.Z
## is cut: `make release VERSION=X.Y.Z` writes build/dist/fulgur-X.Y.Z.tar.gz
## and its .sha256 from the tag, and the checksum and the download URL
## (RELEASE_HOME=https://github.com/<owner>/<repo>, default: the remote
## origin) into the easyconfigs and the Spack package. REF=<commit> instead
## of the tag makes a candidate.
.PHONY: release
release:
	@bash scripts/make_dist.sh --release "$(VERSION)" $(if $(REF),--ref "$(REF)") $(if $(RELEASE_HOME),--home "$(RELEASE_HOME)")

## The CPU container built as a site would and run read-only, non-root,
## without network (scripts/check_container.sh; as root; about half an hour).
## CONTAINER_ENGINE=docker checks it with Docker (default podman).
.PHONY: check-container
check-container:
	@bash scripts/check_container.sh
