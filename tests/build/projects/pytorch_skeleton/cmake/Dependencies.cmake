# Skeleton: PyTorch's cmake/*.cmake files define further options.
option(USE_KINETO "Use Kineto profiling library" ON)
