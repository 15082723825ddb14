# Fused kernels against the float64 reference (CPU), and the CUDA kernels (skipped without a GPU).
fpa_test(test_fused test_fused.cpp test_fused_properties.cpp)
