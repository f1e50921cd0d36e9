/* The libFuzzer entry point every target in this directory defines.  With
 * clang and HPW_FUZZ=ON a target links against libFuzzer; otherwise replay.c
 * supplies main() and runs the committed corpus through it as a test. */
#pragma once
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
