package io.kvrouter.engines.events;

import io.kvrouter.core.indexer.StorageTier;
import java.util.Locale;

/**
 * An event's {@code medium} as the router's storage tier. vLLM names {@code GPU}, {@code CPU} and the offloading
 * tiers' media ({@code STORAGE}, {@code FS}, {@code OBJ}); SGLang {@code GPU}, {@code CPU_PINNED}, {@code DISK} and
 * HiCache's {@code CPU_TIER1} / {@code CPU_TIER2}. No medium (older releases) is the GPU.
 */
public final class Media {
  private Media() {}

  /** The tier, or null for a medium the router has no tier for (the event is skipped and counted). */
  public static StorageTier tier(String medium) {
    if (medium == null) {
      return StorageTier.DEVICE;
    }
    return switch (medium.toUpperCase(Locale.ROOT)) {
      case "GPU", "DEVICE", "HBM" -> StorageTier.DEVICE;
      case "CPU", "CPU_PINNED", "CPU_TIER1", "DRAM", "HOST" -> StorageTier.HOST;
      case "CPU_TIER2", "DISK", "LOCAL_DISK", "SSD", "STORAGE", "FS", "OBJ" -> StorageTier.DISK;
      default -> null;
    };
  }
}
