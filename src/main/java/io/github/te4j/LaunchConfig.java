package io.github.te4j;

/**
 * The shape of a kernel launch: grid and block dimensions, dynamic shared memory, and whether
 * the launch is cooperative (every block resident at once, so a grid-wide barrier such as
 * {@code cooperative_groups::this_grid().sync()} or {@code mc_grid_sync()} can be used).
 * Immutable.
 *
 * @since 0.1
 */
public final class LaunchConfig
{
    private final int gridX;
    private final int gridY;
    private final int gridZ;
    private final int blockX;
    private final int blockY;
    private final int blockZ;
    private final long sharedBytes;
    private final boolean cooperative;

    private LaunchConfig(final int gridX, final int gridY, final int gridZ, final int blockX, final int blockY,
        final int blockZ, final long sharedBytes, final boolean cooperative)
    {
        this.gridX = gridX;
        this.gridY = gridY;
        this.gridZ = gridZ;
        this.blockX = blockX;
        this.blockY = blockY;
        this.blockZ = blockZ;
        this.sharedBytes = sharedBytes;
        this.cooperative = cooperative;
    }

    /**
     * {@code blocks} blocks of {@code threads} threads (one-dimensional).
     *
     * @param blocks blocks in the grid, at least 1
     * @param threads threads per block, in [1, 1024]
     * @return the shape, without dynamic shared memory and not cooperative
     * @throws IllegalArgumentException when a dimension is out of range
     * @since 0.1
     */
    public static LaunchConfig of(final int blocks, final int threads)
    {
        return of(blocks, 1, 1, threads, 1, 1);
    }

    /**
     * A three-dimensional grid of three-dimensional blocks.
     *
     * @param gridX blocks along x, at least 1
     * @param gridY blocks along y, in [1, 65535]
     * @param gridZ blocks along z, in [1, 65535]
     * @param blockX threads along x, in [1, 1024]
     * @param blockY threads along y, in [1, 1024]
     * @param blockZ threads along z, in [1, 64]
     * @return the shape, without dynamic shared memory and not cooperative
     * @throws IllegalArgumentException when a dimension is out of range or a block has more than 1024 threads
     * @since 0.1
     */
    public static LaunchConfig of(final int gridX, final int gridY, final int gridZ, final int blockX,
        final int blockY, final int blockZ)
    {
        checkDim("grid x", gridX, Integer.MAX_VALUE);
        checkDim("grid y", gridY, 65535);
        checkDim("grid z", gridZ, 65535);
        checkDim("block x", blockX, 1024);
        checkDim("block y", blockY, 1024);
        checkDim("block z", blockZ, 64);
        Errors.checkArgument((long) blockX * blockY * blockZ <= 1024,
            "block " + blockX + "x" + blockY + "x" + blockZ + " has more than 1024 threads");
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, 0, false);
    }

    private static void checkDim(final String what, final int v, final int max)
    {
        Errors.checkArgument(v >= 1 && v <= max, what + "=" + v + " outside [1, " + max + "]");
    }

    /**
     * This shape with {@code bytes} of dynamic shared memory per block (above 48 KiB the kernel opts in at launch).
     *
     * @param bytes dynamic shared memory per block, in [0, 256 KiB]
     * @return a new shape; this one is unchanged
     * @throws IllegalArgumentException when {@code bytes} is out of range
     * @since 0.1
     */
    public LaunchConfig sharedBytes(final long bytes)
    {
        Errors.checkArgument(bytes >= 0 && bytes <= 256 * 1024, "sharedBytes=" + bytes + " outside [0, 256 KiB]");
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, bytes, cooperative);
    }

    /**
     * This shape launched cooperatively: all blocks run at once (the grid must fit on the GPU,
     * see {@link Kernel#maxCooperativeBlocks}), so blocks may wait for each other.
     *
     * @param on whether the launch is cooperative
     * @return a new shape; this one is unchanged
     * @since 0.1
     */
    public LaunchConfig cooperative(final boolean on)
    {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes, on);
    }

    /**
     * Blocks along x.
     *
     * @return the grid's x dimension
     * @since 0.1
     */
    public int gridX()
    {
        return gridX;
    }

    /**
     * Blocks along y.
     *
     * @return the grid's y dimension
     * @since 0.1
     */
    public int gridY()
    {
        return gridY;
    }

    /**
     * Blocks along z.
     *
     * @return the grid's z dimension
     * @since 0.1
     */
    public int gridZ()
    {
        return gridZ;
    }

    /**
     * Threads along x.
     *
     * @return the block's x dimension
     * @since 0.1
     */
    public int blockX()
    {
        return blockX;
    }

    /**
     * Threads along y.
     *
     * @return the block's y dimension
     * @since 0.1
     */
    public int blockY()
    {
        return blockY;
    }

    /**
     * Threads along z.
     *
     * @return the block's z dimension
     * @since 0.1
     */
    public int blockZ()
    {
        return blockZ;
    }

    /**
     * Threads per block.
     *
     * @return blockX x blockY x blockZ
     * @since 0.1
     */
    public int threadsPerBlock()
    {
        return blockX * blockY * blockZ;
    }

    /**
     * Blocks in the grid.
     *
     * @return gridX x gridY x gridZ
     * @since 0.1
     */
    public long blocks()
    {
        return (long) gridX * gridY * gridZ;
    }

    /**
     * Dynamic shared memory per block.
     *
     * @return the bytes, 0 unless {@link #sharedBytes(long)} set them
     * @since 0.1
     */
    public long sharedBytes()
    {
        return sharedBytes;
    }

    /**
     * Whether the launch is cooperative ({@link #cooperative(boolean)}).
     *
     * @return true when all blocks must run at once
     * @since 0.1
     */
    public boolean isCooperative()
    {
        return cooperative;
    }

    @Override
    public String toString()
    {
        return "LaunchConfig[grid " + gridX + "x" + gridY + "x" + gridZ + ", block " + blockX + "x" + blockY + "x"
            + blockZ + (sharedBytes > 0 ? ", shared " + sharedBytes + " B" : "") + (cooperative ? ", cooperative" : "")
            + "]";
    }
}
