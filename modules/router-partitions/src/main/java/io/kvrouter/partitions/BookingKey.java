package io.kvrouter.partitions;

/** A booking's identity: its region's admission actor, its request id and its fencing attempt. */
public record BookingKey(String region, String requestId, long attempt) {
  @Override
  public String toString() {
    return region + "/" + requestId + "@" + attempt;
  }
}
