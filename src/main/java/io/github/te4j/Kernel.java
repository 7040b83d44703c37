package io.github.te4j;

import java.util.Arrays;
import java.util.concurrent.locks.Lock;

/**
 * A kernel of a {@link DeviceModule}, launched on an {@link OpStream} of the same device with
 * a {@link LaunchConfig} and {@link KernelArgs}. Every launch is checked before it reaches the
 * driver: open objects, the stream's platform and device, the block size against the kernel's
 * limit, a cooperative grid against what fits on the GPU, and, where the driver reports the
 * kernel's parameters ({@code cuFuncGetParamInfo}), their count and sizes.
 *
 * <p>A launch is asynchronous like every stream operation: a fault inside the kernel (an
 * illegal address, a trap, a bounded wait that gives up with a trap) is thrown by the stream's
 * next {@link OpStream#synchronize synchronize} as a {@link Te4jException} naming the kernel;
 * such a fault is sticky (DEVICE_FAULT: the process's CUDA context is unusable and the process
 * must restart). Launches inside {@link OpStream#beginCapture() graph capture} are captured.
 * Thread-safe.
 *
 * @since 0.1
 */
public final class Kernel
{
    private final DeviceModule module;
    private final long function;
    private final String name;
    private final long[] paramSizes;
    private final int maxThreadsPerBlock;
    private volatile int maxCooperativeBlocksCache = -1;
    private volatile long cooperativeShapeCache = -1;
    private LaunchChecked lastChecked;

    Kernel(final DeviceModule module, final long function, final String name, final long[] paramSizes,
        final int maxThreadsPerBlock)
    {
        this.module = module;
        this.function = function;
        this.name = name;
        this.paramSizes = paramSizes;
        this.maxThreadsPerBlock = maxThreadsPerBlock;
    }

    /**
     * The name it was looked up by.
     *
     * @return the {@code extern "C"} or lowered name
     * @since 0.1
     */
    public String name()
    {
        return name;
    }

    /**
     * The module it belongs to.
     *
     * @return the module; closing it ends this kernel too
     * @since 0.1
     */
    public DeviceModule module()
    {
        return module;
    }

    /**
     * The most threads per block this kernel can be launched with (its registers decide).
     *
     * @return the limit, at most 1024
     * @since 0.1
     */
    public int maxThreadsPerBlock()
    {
        return maxThreadsPerBlock;
    }

    /**
     * Number of parameters as the driver reports them, or -1 when it cannot tell (drivers before CUDA 12.4).
     *
     * @return the count, or -1
     * @since 0.1
     */
    public int parameterCount()
    {
        return paramSizes == null ? -1 : paramSizes.length;
    }

    /**
     * Byte sizes of the parameters as the driver reports them, or null when it cannot tell.
     *
     * @return a new array of sizes, or null
     * @since 0.1
     */
    public long[] parameterSizes()
    {
        return paramSizes == null ? null : paramSizes.clone();
    }

    /**
     * The largest grid of a cooperative launch with this block size and shared memory (all blocks resident).
     *
     * @param threadsPerBlock threads per block, in [1, 1024]
     * @param sharedBytes dynamic shared memory per block, not negative
     * @return the most blocks that are resident at once
     * @throws IllegalArgumentException when an argument is out of range
     * @throws ClosedException when the module is closed
     * @throws Te4jException when the driver's query fails
     * @since 0.1
     */
    public int maxCooperativeBlocks(final int threadsPerBlock, final long sharedBytes)
    {
        Errors.checkArgument(threadsPerBlock >= 1 && threadsPerBlock <= 1024,
            "threadsPerBlock=" + threadsPerBlock + " outside [1, 1024]");
        Errors.checkArgument(sharedBytes >= 0, "sharedBytes < 0");
        final long shape = (long) threadsPerBlock << 32 | sharedBytes;
        if (cooperativeShapeCache == shape)
        {
            return maxCooperativeBlocksCache;
        }
        final Lock l = module.enter();
        try
        {
            final int n = Errors.check(module.peer().maxCooperativeBlocks(function, threadsPerBlock, sharedBytes),
                "maxCooperativeBlocks(" + name + ")", module.peer()::lastError);
            maxCooperativeBlocksCache = n;
            cooperativeShapeCache = shape;
            return n;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Enqueues this kernel on {@code stream}. Throws {@link IllegalArgumentException} for a
     * launch that cannot be right (wrong argument count or sizes, a block over the kernel's
     * limit, a stream of another device, a closed object) and {@link Te4jException} when the
     * driver refuses it (e.g. a cooperative grid that does not fit).
     *
     * @param stream a CUDA stream of the module's device
     * @param config the launch shape
     * @param args the parameters, matching the kernel's
     * @throws IllegalArgumentException as above, or when an argument is null
     * @throws ClosedException when the stream, the module or an object in {@code args} is closed
     * @throws Te4jException when the driver refuses the launch
     * @since 0.1
     */
    public void launch(final OpStream stream, final LaunchConfig config, final KernelArgs args)
    {
        launch(stream, config, args, 1);
    }

    /**
     * Enqueues {@code repeats} launches of this kernel with the same shape and arguments, back
     * to back from native code (the arguments checked and marshalled once): for many small
     * launches. Otherwise as {@link #launch(OpStream, LaunchConfig, KernelArgs)}.
     *
     * @param stream a CUDA stream of the module's device
     * @param config the launch shape
     * @param args the parameters, matching the kernel's
     * @param repeats how many launches, at least 1
     * @throws IllegalArgumentException as {@link #launch(OpStream, LaunchConfig, KernelArgs)} says, or when
     *     {@code repeats} is below 1
     * @throws ClosedException when the stream, the module or an object in {@code args} is closed
     * @throws Te4jException when the driver refuses the launch
     * @since 0.1
     */
    public void launch(final OpStream stream, final LaunchConfig config, final KernelArgs args, final int repeats)
    {
        final LaunchChecked last = lastChecked;
        if (last == null || last.stream != stream || last.config != config || last.args != args
            || last.argsVersion != args.version() || repeats < 1)
        {
            check(stream, config, args, repeats);
            lastChecked = new LaunchChecked(stream, config, args, args.version());
        }
        final NativeResource[] used = args.resources();
        NativeResource.enter2(stream, module);
        try
        {
            NativeResource.enterEach(used);
            try
            {
                final long block = args.marshal();
                final int status = repeats == 1
                    ? module.peer().launch(function, stream.nativeHandleEntered(), config.gridX(), config.gridY(),
                        config.gridZ(), config.blockX(), config.blockY(), config.blockZ(), config.sharedBytes(),
                        config.isCooperative() ? 1 : 0, block, args.offsetsAddress(), args.count())
                    : module.peer().launchRepeated(function, stream.nativeHandleEntered(), config.gridX(),
                        config.gridY(), config.gridZ(), config.blockX(), config.blockY(), config.blockZ(),
                        config.sharedBytes(), config.isCooperative() ? 1 : 0, block, args.offsetsAddress(),
                        args.count(), repeats);
                if (status < 0)
                {
                    throw Errors.toException(status, "launch(" + name + ", " + config + ")",
                        module.peer().lastError());
                }
                stream.userKernelLaunched(name, module, used);
            }
            finally
            {
                NativeResource.exitEach(used);
            }
        }
        finally
        {
            NativeResource.exit2(stream, module);
        }
    }

    /**
     * The checks of a launch that depend only on its stream, shape and parameter list (every one
     * of them immutable but the list, whose version is compared): a loop that launches the same
     * triple again skips them. Messages are built only when a check fails (building them eagerly
     * costs more than the launch itself).
     */
    private void check(final OpStream stream, final LaunchConfig config, final KernelArgs args, final int repeats)
    {
        if (repeats < 1 || stream == null || config == null || args == null)
        {
            throw new IllegalArgumentException(repeats < 1 ? "repeats=" + repeats + " < 1"
                : (stream == null ? "stream" : config == null ? "config" : "args") + " is null");
        }
        if (stream.platform() != Platform.CUDA)
        {
            throw new IllegalArgumentException(stream + " is on the " + stream.platform()
                + " platform; user kernels run on CUDA streams");
        }
        if (stream.device() != module.device())
        {
            throw new IllegalArgumentException("kernel " + name + " is loaded on CUDA:" + module.device()
                + ", the stream is on CUDA:" + stream.device());
        }
        checkArguments(args);
        if (config.threadsPerBlock() > maxThreadsPerBlock)
        {
            throw new IllegalArgumentException("kernel " + name + " takes at most " + maxThreadsPerBlock
                + " threads per block, " + config + " has " + config.threadsPerBlock());
        }
        if (config.isCooperative())
        {
            final int max = maxCooperativeBlocks(config.threadsPerBlock(), config.sharedBytes());
            if (config.blocks() > max)
            {
                throw new IllegalArgumentException("a cooperative launch of " + name + " fits at most " + max
                    + " blocks of " + config.threadsPerBlock() + " threads on this GPU, " + config + " has "
                    + config.blocks());
            }
        }
        for (final NativeResource r : args.resources())
        {
            checkOnCuda(r);
        }
    }

    /** The last launch that passed {@link #check}: immutable, so a racy read sees it whole. */
    private static final class LaunchChecked
    {
        final OpStream stream;
        final LaunchConfig config;
        final KernelArgs args;
        final int argsVersion;

        LaunchChecked(final OpStream stream, final LaunchConfig config, final KernelArgs args, final int argsVersion)
        {
            this.stream = stream;
            this.config = config;
            this.args = args;
            this.argsVersion = argsVersion;
        }
    }

    private void checkOnCuda(final NativeResource r)
    {
        if (r instanceof DeviceBuffer && ((DeviceBuffer) r).platform() != Platform.CUDA)
        {
            throw new IllegalArgumentException("kernel " + name + ": " + r + " is not CUDA memory");
        }
        if (r instanceof CommContext && ((CommContext) r).platform() != Platform.CUDA)
        {
            throw new IllegalArgumentException("kernel " + name + ": " + r + " is not a CUDA context");
        }
    }

    private void checkArguments(final KernelArgs args)
    {
        if (paramSizes == null)
        {
            return;  // the driver cannot tell: the caller's list is taken as it is
        }
        if (args.count() != paramSizes.length)
        {
            throw new IllegalArgumentException("kernel " + name + " takes " + paramSizes.length + " parameters "
                + Arrays.toString(paramSizes) + " (bytes), " + args.count() + " given");
        }
        for (int i = 0; i < paramSizes.length; i++)
        {
            final long given = args.sizeOf(i);
            if (given != paramSizes[i])
            {
                throw new IllegalArgumentException("kernel " + name + " parameter " + i + " is " + paramSizes[i]
                    + " bytes, given " + args.describe(i) + " (parameter sizes " + Arrays.toString(paramSizes) + ")");
            }
        }
    }

    @Override
    public String toString()
    {
        return "Kernel[" + name + " in " + module + "]";
    }
}
