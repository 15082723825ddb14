# Theory: RapidCheck properties of T1, T2, T3(a), T3(b) and T5 against the reference kernels.
fpa_test(test_theory test_theory.cpp test_theory_properties.cpp)
target_link_libraries(test_theory PRIVATE fpa_theory)
# The studies behind the theory executables, called in-process on tiny settings.
fpa_test(test_theory_studies test_theory_studies.cpp)
target_link_libraries(test_theory_studies PRIVATE fpa_theory_studies)
