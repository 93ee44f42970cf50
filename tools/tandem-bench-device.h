// tandem-bench --device cuda (tandem-bench-device.cc): argv without the
// --device flag; returns the exit status.
#pragma once

int device_bench_main(int argc, char** argv);
