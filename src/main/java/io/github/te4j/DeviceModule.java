package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeDeviceModule;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;

/**
 * A user's CUDA module (a {@link KernelImage}: cubin, fatbin or PTX) loaded on the device of a
 * CUDA {@link TransferEngine}, giving {@link Kernel} handles by name. Closing it first drains
 * every stream that launched one of its kernels; keep it open while a {@link CapturedGraph}
 * that launches its kernels is still replayed.
 *
 * @since 0.1
 */
public final class DeviceModule extends NativeResource
{
    private final NativeDeviceModule peer;
    private final int device;
    private final String name;
    private final Map<String, Kernel> kernels = new ConcurrentHashMap<>();

    private DeviceModule(final NativeDeviceModule peer, final int device, final String name)
    {
        super("DeviceModule(" + name + ")");
        this.peer = peer;
        this.device = device;
        this.name = name;
    }

    /**
     * Loads {@code image} on {@code engine}'s CUDA device. Throws {@link UnavailableException}
     * on the host platform or without the CUDA build/driver, {@link Te4jException} with the
     * driver's (JIT) log when the image does not load, e.g. INVALID_ARGUMENT for an image with
     * no code for this GPU.
     *
     * @param engine a CUDA engine
     * @param image the image to load
     * @return the loaded module; close it, or the engine, when done
     * @throws IllegalArgumentException when an argument is null
     * @throws UnavailableException when {@code engine} is not CUDA
     * @throws ClosedException when {@code engine} is closed
     * @throws Te4jException when the driver does not load the image, or with {@code OUT_OF_MEMORY}
     * @since 0.1
     */
    public static DeviceModule load(final TransferEngine engine, final KernelImage image)
    {
        Errors.checkArgument(engine != null, "engine is null");
        Errors.checkArgument(image != null, "image is null");
        if (engine.platform() != Platform.CUDA)
        {
            throw new UnavailableException("user kernels run on the CUDA platform only, " + engine + " is "
                + engine.platform() + " (fix: build the engine with platform(Platform.CUDA))");
        }
        final Lock l = engine.enter();
        try
        {
            final byte[] bytes = image.rawBytes();
            final NativeDeviceModule p = NativeDeviceModule.load(engine.device(), bytes, bytes.length);
            if (p == null || p.isNull())
            {
                throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "DeviceModule.load returned null");
            }
            if (p.status() != 0)
            {
                final Te4jException e = Errors.toException(p.status(), "DeviceModule.load(" + image + ")", p.lastError());
                NativeApi.destroyObject(p);
                throw e;
            }
            return new DeviceModule(p, engine.device(), image.name());
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The kernel {@code kernelName}: an {@code extern "C"} name or a lowered C++ name
     * ({@link KernelImage#loweredName}). Throws INVALID_ARGUMENT when the module has no such kernel.
     *
     * @param kernelName the kernel's name
     * @return the kernel (the same object for the same name)
     * @throws IllegalArgumentException when {@code kernelName} is null or empty
     * @throws ClosedException when this module is closed
     * @throws Te4jException with {@code INVALID_ARGUMENT} when the module has no such kernel
     * @since 0.1
     */
    public Kernel kernel(final String kernelName)
    {
        Errors.checkArgument(kernelName != null && !kernelName.isEmpty() && kernelName.indexOf('\0') < 0,
            "kernel name is null or empty");
        final Lock l = enter();
        try
        {
            final Kernel cached = kernels.get(kernelName);
            if (cached != null)
            {
                return cached;
            }
            final long[] fn = new long[1];
            Errors.check(peer.getFunction(kernelName, fn), "kernel(\"" + kernelName + "\") in " + name, peer::lastError);
            final int[] count = new int[1];
            final long[] sizes = new long[256];
            Errors.check(peer.paramInfo(fn[0], count, sizes, sizes.length), "paramInfo(" + kernelName + ")",
                peer::lastError);
            final int maxThreads = Errors.check(peer.maxThreadsPerBlock(fn[0]), "maxThreadsPerBlock", peer::lastError);
            final long[] known = count[0] >= 0 && count[0] <= sizes.length ? java.util.Arrays.copyOf(sizes, count[0]) : null;
            final Kernel k = new Kernel(this, fn[0], kernelName, known, maxThreads);
            final Kernel raced = kernels.putIfAbsent(kernelName, k);
            return raced != null ? raced : k;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The CUDA device it is loaded on.
     *
     * @return the device ordinal
     * @since 0.1
     */
    public int device()
    {
        return device;
    }

    /**
     * The name of the image it was loaded from.
     *
     * @return the image's name
     * @since 0.1
     */
    public String imageName()
    {
        return name;
    }

    NativeDeviceModule peer()
    {
        return peer;
    }

    @Override
    void release()
    {
        // A kernel still queued or running keeps executing this module's code.
        if (!InFlightWork.drainUsersOf(this))
        {
            return;  // kept loaded (a bounded leak, logged by InFlightWork) rather than unloaded under a kernel
        }
        NativeApi.destroyObject(peer);
    }

    @Override
    public String toString()
    {
        return "DeviceModule[" + name + " on CUDA:" + device + "]";
    }
}
