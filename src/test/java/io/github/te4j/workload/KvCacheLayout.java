package io.github.te4j.workload;

import io.github.te4j.check.Patterns;
import java.util.Random;

/**
 * The shape of a paged KV cache handed from a prefill rank to a decode rank, which both ranks
 * derive from the same numbers without sending it: {@code layers} layers of {@code blocksPerLayer}
 * blocks of {@code blockBytes} each, every block at a random slot of a pool of {@code poolBlocks}
 * slots on each side (the prefill's slots and the decode's differ, as a serving system's block
 * tables do), and the block's contents a seeded stream ({@link Patterns}) that the decode rank
 * regenerates to check every byte.
 */
public final class KvCacheLayout
{
    /** The most slots a pool may have (a decode rank's check of untouched slots keeps a flag per slot). */
    public static final int MAX_POOL_BLOCKS = 1 << 26;

    private final int layers;
    private final int blocksPerLayer;
    private final long blockBytes;
    private final int poolBlocks;
    private final long seed;
    private final int[] prefillSlots;
    private final int[] decodeSlots;

    /**
     * @throws IllegalArgumentException when a count is not positive, a block is not a multiple of
     *                                  8 bytes, or the pool has fewer slots than blocks to place
     */
    public KvCacheLayout(final int layers, final int blocksPerLayer, final long blockBytes, final int poolBlocks,
        final long seed)
    {
        check(layers >= 1, "layers must be at least 1, got " + layers);
        check(blocksPerLayer >= 1, "blocks per layer must be at least 1, got " + blocksPerLayer);
        // 8-byte multiples keep every block 8-byte aligned.
        check(blockBytes >= 8 && blockBytes % 8 == 0 && blockBytes <= 1L << 30,
            "the block size must be a multiple of 8 bytes from 8 B to 1 GiB, got " + blockBytes);
        final long blocks = (long) layers * blocksPerLayer;
        check(poolBlocks >= blocks, "the pool has " + poolBlocks + " slots for " + layers + " x " + blocksPerLayer
            + " = " + blocks + " blocks: give at least that many");
        check(poolBlocks <= MAX_POOL_BLOCKS, "the pool has " + poolBlocks + " slots, more than "
            + MAX_POOL_BLOCKS + ": use larger blocks or a smaller pool");
        this.layers = layers;
        this.blocksPerLayer = blocksPerLayer;
        this.blockBytes = blockBytes;
        this.poolBlocks = poolBlocks;
        this.seed = seed;
        this.prefillSlots = distinctSlots(new Random(Patterns.mix(seed ^ 0x5052454649L)), (int) blocks, poolBlocks);
        this.decodeSlots = distinctSlots(new Random(Patterns.mix(seed ^ 0x4445434fL)), (int) blocks, poolBlocks);
    }

    private static void check(final boolean ok, final String message)
    {
        if (!ok)
        {
            throw new IllegalArgumentException(message);
        }
    }

    /**
     * {@code n} distinct random slots of [0, pool) in random order: drawn and redrawn on a repeat
     * where the pool is much larger than n, else the start of a partial Fisher-Yates shuffle.
     */
    private static int[] distinctSlots(final Random rnd, final int n, final int pool)
    {
        if (pool / 4 > n)
        {
            final java.util.Set<Integer> seen = new java.util.HashSet<>();
            final int[] out = new int[n];
            for (int i = 0; i < n; i++)
            {
                int s = rnd.nextInt(pool);
                while (!seen.add(s))
                {
                    s = rnd.nextInt(pool);
                }
                out[i] = s;
            }
            return out;
        }
        final int[] all = new int[pool];
        for (int i = 0; i < pool; i++)
        {
            all[i] = i;
        }
        for (int i = 0; i < n; i++)
        {
            final int j = i + rnd.nextInt(pool - i);
            final int t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        return java.util.Arrays.copyOf(all, n);
    }

    public int layers()
    {
        return layers;
    }

    public int blocksPerLayer()
    {
        return blocksPerLayer;
    }

    public long blockBytes()
    {
        return blockBytes;
    }

    public int poolBlocks()
    {
        return poolBlocks;
    }

    /** Bytes of one layer's blocks. */
    public long layerBytes()
    {
        return blocksPerLayer * blockBytes;
    }

    /** Bytes of the pool (every slot). */
    public long poolBytes()
    {
        return poolBlocks * blockBytes;
    }

    /** Offset in the prefill rank's pool of block {@code block} of layer {@code layer}. */
    public long prefillOffset(final int layer, final int block)
    {
        return prefillSlots[index(layer, block)] * blockBytes;
    }

    /** Offset in the decode rank's pool where block {@code block} of layer {@code layer} lands. */
    public long decodeOffset(final int layer, final int block)
    {
        return decodeSlots[index(layer, block)] * blockBytes;
    }

    /** The seed of the stream that fills block {@code block} of layer {@code layer}. */
    public long blockSeed(final int layer, final int block)
    {
        return Patterns.seed(seed, layer, block, 0x4b56);
    }

    /** Whether the decode rank's slot {@code slot} receives a block. */
    public boolean[] decodeSlotsUsed()
    {
        final boolean[] used = new boolean[poolBlocks];
        for (final int s : decodeSlots)
        {
            used[s] = true;
        }
        return used;
    }

    private int index(final int layer, final int block)
    {
        checkLayer(layer);
        if (block < 0 || block >= blocksPerLayer)
        {
            throw new IndexOutOfBoundsException("block " + block + " outside 0.." + (blocksPerLayer - 1));
        }
        return layer * blocksPerLayer + block;
    }

    private void checkLayer(final int layer)
    {
        if (layer < 0 || layer >= layers)
        {
            throw new IndexOutOfBoundsException("layer " + layer + " outside 0.." + (layers - 1));
        }
    }

    @Override
    public String toString()
    {
        return layers + " layers x " + blocksPerLayer + " blocks x " + blockBytes + " B in pools of " + poolBlocks
            + " slots";
    }
}
