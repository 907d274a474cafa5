package io.kvrouter.core.indexer;

/**
 * Where an engine holds a cached block. The tier matters because reusing a block costs more the slower its tier is:
 * the kv policy credits device blocks fully and host/disk blocks beyond the device prefix partially.
 */
public enum StorageTier {
  DEVICE,
  HOST,
  DISK;

  /** This tier's bit in a node entry's tier mask. */
  int bit() {
    return 1 << ordinal();
  }

  /** The bits of this tier and every faster one: a block counts for a tier's run if it is at least that fast. */
  int atLeastAsFast() {
    return (bit() << 1) - 1;
  }
}
