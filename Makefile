# The two commands of the README. PRESET picks the CMake preset: `release`
# builds the CUDA backend when nvcc is found and is CPU-only otherwise.
PRESET ?= release
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)
BENCH_ARGS ?= --sizes 2^10..2^24 --dtypes f32,bf16 --reductions mean,sum,none --op forward,fused

.PHONY: build test bench install clean

build:
	cmake --preset $(PRESET)
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The benchmark on the best device present (cuda when one is visible).
bench: build
	$(BUILD)/mseloss bench --device auto $(BENCH_ARGS)

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf build
