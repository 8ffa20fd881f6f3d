# The compile pipeline tying reader, translator and runtime together.
target_sources(luminal_core PRIVATE
  csrc/compiler/compiled_program.cpp
)
