package io.kvrouter.epp;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import java.util.ArrayList;
import java.util.List;

/**
 * The data plane's subset hint: {@code metadata_context.filter_metadata["envoy.lb.subset_hint"]
 * ["x-gateway-destination-endpoint-subset"]}, a list of endpoints (Envoy's metadata as most gateways write it) or
 * one comma-separated string (what Envoy's header-to-metadata filter writes). When present the picker chooses only
 * among the workers it admits ({@link Destination#admits}); when it admits none, or is empty, the answer is 503.
 */
public final class SubsetHint {
  private SubsetHint() {}

  /** The hint's entries, or null when {@code metadata} carries no hint (every worker is a candidate). */
  public static List<Destination> of(Metadata metadata) {
    if (metadata == null) {
      return null;
    }
    Struct namespace = metadata.getFilterMetadataMap().get(EppHeaders.SUBSET_NAMESPACE);
    if (namespace == null || !namespace.containsFields(EppHeaders.SUBSET)) {
      return null;
    }
    Value value = namespace.getFieldsOrThrow(EppHeaders.SUBSET);
    List<Destination> out = new ArrayList<>();
    switch (value.getKindCase()) {
      case LIST_VALUE -> {
        for (Value entry : value.getListValue().getValuesList()) {
          if (entry.hasStringValue()) {
            add(out, entry.getStringValue());
          }
        }
      }
      case STRING_VALUE -> add(out, value.getStringValue());
      default -> { } // a number, a struct: admits nothing
    }
    return out;
  }

  private static void add(List<Destination> out, String text) {
    for (String part : text.split(",")) {
      Destination entry = Destination.ofHint(part);
      if (entry != null) {
        out.add(entry);
      }
    }
  }

  /** Whether any entry of {@code hint} admits {@code endpoint}. */
  public static boolean admits(List<Destination> hint, Destination endpoint) {
    if (endpoint == null) {
      return false;
    }
    for (Destination entry : hint) {
      if (entry.admits(endpoint)) {
        return true;
      }
    }
    return false;
  }
}
