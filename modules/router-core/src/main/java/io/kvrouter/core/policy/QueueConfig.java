package io.kvrouter.core.policy;

import static io.kvrouter.core.policy.PolicyParameters.bad;
import static io.kvrouter.core.policy.PolicyParameters.invalid;

import io.kvrouter.core.error.RoutingError;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The admission queue's configuration, from a model's policy parameters (the {@code queue_*} keys, {@code max_pending}
 * and one {@code class.<name>} key per declared class): the classes and how a Book is put in one, the uncached-prompt
 * buckets, strict-priority aging and the total bound. Queueing is on for a class once one of its busy thresholds is
 * set; with none set anywhere (the default) no Book ever waits.
 *
 * <p>A declared class inherits every model-level {@code queue_*} value it does not set itself. The {@code default}
 * class takes every Book no declared class takes; {@code class.default} may configure it (no family, no bucket).
 *
 * @param defaultClass the synthetic class, first in the round-robin ring
 * @param classes the declared classes other than {@code default}, by name
 * @param buckets uncached-prompt buckets by ascending floor (the first at 0), or empty
 * @param agingMillis 0: off; else a Book that has waited this long ranks above every strict-priority tier of its class
 *     (among the aged, by arrival)
 * @param maxPending the most Books waiting at once over all classes
 * @param parameters the parameters this was parsed from, as given (every model-level key, then the class
 *     definitions by name): what {@link PolicyConfig#toParameters} lists, so a class keeps inheriting what it did not set
 */
public record QueueConfig(
    PolicyClass defaultClass,
    List<PolicyClass> classes,
    List<IslBucket> buckets,
    long agingMillis,
    int maxPending,
    Map<String, String> parameters) {

  public static final String QUEUE_POLICY = "queue_policy";
  public static final String QUEUE_THRESHOLD_FRAC = "queue_threshold_frac";
  public static final String QUEUE_PREFILL_TOKENS_THRESHOLD = "queue_prefill_tokens_threshold";
  public static final String QUEUE_DECODE_BLOCKS_THRESHOLD_FRAC = "queue_decode_blocks_threshold_frac";
  public static final String QUEUE_BUSY_WORKER_RATIO = "queue_busy_worker_ratio";
  public static final String QUEUE_QUANTUM = "queue_quantum";
  public static final String QUEUE_REQUESTS_PER_WORKER = "queue_requests_per_worker";
  public static final String QUEUE_RAW_ISL_TOKENS_PER_WORKER = "queue_raw_isl_tokens_per_worker";
  public static final String QUEUE_CACHED_TOKENS_PER_WORKER = "queue_cached_tokens_per_worker";
  public static final String QUEUE_AGING_MS = "queue_aging_ms";
  public static final String QUEUE_ISL_BUCKETS = "queue_isl_buckets";
  public static final String MAX_PENDING = "max_pending";
  /** Prefix of a class definition's parameter name: {@code class.<name>}. */
  public static final String CLASS_PREFIX = "class.";

  /** Most declared classes (besides {@code default}). */
  public static final int MAX_CLASSES = 16;
  /** Most uncached-prompt buckets. */
  public static final int MAX_BUCKETS = 16;
  /** Class, family and bucket names: a letter or digit, then letters, digits, '_', '.', '-'; at most 64. */
  public static final int MAX_NAME = 64;
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");

  // the keys of a class definition
  static final String FAMILY = "family";
  static final String BUCKET = "bucket";
  static final String ORDER = "queue_policy";
  static final String QUANTUM = "quantum";
  static final String THRESHOLD_FRAC = "threshold_frac";
  static final String PREFILL_TOKENS_THRESHOLD = "prefill_tokens_threshold";
  static final String DECODE_BLOCKS_THRESHOLD_FRAC = "decode_blocks_threshold_frac";
  static final String BUSY_WORKER_RATIO = "busy_worker_ratio";
  static final String REQUESTS_PER_WORKER = "requests_per_worker";
  static final String RAW_ISL_TOKENS_PER_WORKER = "raw_isl_tokens_per_worker";
  static final String CACHED_TOKENS_PER_WORKER = "cached_tokens_per_worker";
  private static final List<String> CLASS_KEYS = List.of(FAMILY, BUCKET, ORDER, QUANTUM, THRESHOLD_FRAC,
      PREFILL_TOKENS_THRESHOLD, DECODE_BLOCKS_THRESHOLD_FRAC, BUSY_WORKER_RATIO, REQUESTS_PER_WORKER,
      RAW_ISL_TOKENS_PER_WORKER, CACHED_TOKENS_PER_WORKER);
  /** A class's value that turns off what it would inherit (a threshold, the ratio, a limit). */
  static final String OFF = "off";

  /** The model-level keys with their defaults, in the order parameters are listed. */
  static Map<String, String> defaultParameters() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(QUEUE_POLICY, QueueOrder.FCFS.wireName());
    p.put(QUEUE_THRESHOLD_FRAC, "");
    p.put(QUEUE_PREFILL_TOKENS_THRESHOLD, "");
    p.put(QUEUE_DECODE_BLOCKS_THRESHOLD_FRAC, "");
    p.put(QUEUE_BUSY_WORKER_RATIO, "");
    p.put(QUEUE_QUANTUM, "1024");
    p.put(QUEUE_REQUESTS_PER_WORKER, "");
    p.put(QUEUE_RAW_ISL_TOKENS_PER_WORKER, "");
    p.put(QUEUE_CACHED_TOKENS_PER_WORKER, "");
    p.put(QUEUE_AGING_MS, "0");
    p.put(QUEUE_ISL_BUCKETS, "");
    p.put(MAX_PENDING, "1024");
    return p;
  }

  /** One uncached-prompt bucket: Books whose uncached prompt tokens are at least {@code minTokens} (and below the next). */
  public record IslBucket(long minTokens, String name) {}

  public QueueConfig {
    classes = List.copyOf(classes);
    buckets = List.copyOf(buckets);
    parameters = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(parameters));
  }

  /** Whether any class queues. */
  public boolean enabled() {
    if (defaultClass.queueingEnabled()) {
      return true;
    }
    for (PolicyClass c : classes) {
      if (c.queueingEnabled()) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether putting a Book in its class or its queue key needs its cached tokens (looked up in the KV index): with
   * buckets, a WSPT class or a cached-token limit.
   */
  public boolean needsCachedTokens() {
    if (!buckets.isEmpty()) {
      return true;
    }
    for (PolicyClass c : all()) {
      if (c.order() == QueueOrder.WSPT || c.cachedTokensPerWorker() != null) {
        return true;
      }
    }
    return false;
  }

  /** Every class, {@code default} first then the declared ones by name: the deficit-round-robin ring's order. */
  public List<PolicyClass> all() {
    List<PolicyClass> all = new ArrayList<>(classes.size() + 1);
    all.add(defaultClass);
    all.addAll(classes);
    return all;
  }

  /** The class named {@code name}, or null. */
  public PolicyClass named(String name) {
    if (defaultClass.name().equals(name)) {
      return defaultClass;
    }
    for (PolicyClass c : classes) {
      if (c.name().equals(name)) {
        return c;
      }
    }
    return null;
  }

  /** The bucket of a Book with {@code uncachedTokens}: the one with the highest floor at or below it; null without buckets. */
  public String bucketOf(long uncachedTokens) {
    String bucket = null;
    for (IslBucket b : buckets) {
      if (uncachedTokens >= b.minTokens()) {
        bucket = b.name();
      }
    }
    return bucket;
  }

  /**
   * The class of a Book that names {@code requested} (its {@code policy_class}; empty: none) with
   * {@code uncachedTokens}: an explicit class of that name; else, with the family {@code requested} (the
   * {@code default} family when no class names that family) and the Book's bucket, the class of that family and
   * bucket, then of that family and any bucket, then of any family and that bucket; else {@code default}.
   */
  public PolicyClass resolve(String requested, long uncachedTokens) {
    String family = PolicyClass.DEFAULT;
    if (requested != null && !requested.isEmpty()) {
      for (PolicyClass c : classes) {
        if (c.explicit() && c.name().equals(requested)) {
          return c;
        }
        if (requested.equals(c.family())) {
          family = requested;
        }
      }
    }
    String bucket = bucketOf(uncachedTokens);
    PolicyClass familyAnyBucket = null;
    PolicyClass bucketAnyFamily = null;
    for (PolicyClass c : classes) {
      boolean familyMatches = family.equals(c.family());
      boolean bucketMatches = bucket != null && bucket.equals(c.bucket());
      if (familyMatches && bucketMatches) {
        return c;
      }
      if (familyMatches && c.bucket() == null && familyAnyBucket == null) {
        familyAnyBucket = c;
      }
      if (bucketMatches && c.family() == null && bucketAnyFamily == null) {
        bucketAnyFamily = c;
      }
    }
    if (familyAnyBucket != null) {
      return familyAnyBucket;
    }
    return bucketAnyFamily != null ? bucketAnyFamily : defaultClass;
  }

  // ---- parsing

  /** Whether {@code key} is a class definition's parameter name. */
  public static boolean isClassKey(String key) {
    return key.startsWith(CLASS_PREFIX);
  }

  /**
   * The queue configuration of the merged parameters {@code p} (every model-level key present; class definitions as
   * {@code class.<name>} keys). Throws INVALID_ARGUMENT INVALID_POLICY_PARAMETER naming the first bad value.
   */
  static QueueConfig parse(Map<String, String> p) {
    QueueOrder order = order(QUEUE_POLICY, p.get(QUEUE_POLICY));
    BusyThresholds busy = new BusyThresholds(
        PolicyParameters.optionalAtLeast(QUEUE_PREFILL_TOKENS_THRESHOLD, p.get(QUEUE_PREFILL_TOKENS_THRESHOLD), 0),
        PolicyParameters.optionalNonNegative(QUEUE_THRESHOLD_FRAC, p.get(QUEUE_THRESHOLD_FRAC)),
        PolicyParameters.optionalNonNegative(QUEUE_DECODE_BLOCKS_THRESHOLD_FRAC,
            p.get(QUEUE_DECODE_BLOCKS_THRESHOLD_FRAC)));
    Double ratio = PolicyParameters.optionalRatio(QUEUE_BUSY_WORKER_RATIO, p.get(QUEUE_BUSY_WORKER_RATIO));
    long quantum = quantum(QUEUE_QUANTUM, p.get(QUEUE_QUANTUM));
    Long requests = PolicyParameters.optionalAtLeast(QUEUE_REQUESTS_PER_WORKER, p.get(QUEUE_REQUESTS_PER_WORKER), 0);
    Long rawIsl = PolicyParameters.optionalAtLeast(QUEUE_RAW_ISL_TOKENS_PER_WORKER,
        p.get(QUEUE_RAW_ISL_TOKENS_PER_WORKER), 0);
    Long cached = PolicyParameters.optionalAtLeast(QUEUE_CACHED_TOKENS_PER_WORKER,
        p.get(QUEUE_CACHED_TOKENS_PER_WORKER), 0);
    long aging = PolicyParameters.optionalAtLeast(QUEUE_AGING_MS, p.get(QUEUE_AGING_MS), 0);
    long maxPending = PolicyParameters.requiredLong(MAX_PENDING, p.get(MAX_PENDING));
    if (maxPending < 0) {
      throw bad(MAX_PENDING, p.get(MAX_PENDING));
    }
    List<IslBucket> buckets = buckets(p.get(QUEUE_ISL_BUCKETS));
    PolicyClass model = new PolicyClass(PolicyClass.DEFAULT, null, null, order, busy, ratio, quantum, requests,
        rawIsl, cached);

    PolicyClass defaultClass = model;
    TreeMap<String, PolicyClass> declared = new TreeMap<>();
    for (Map.Entry<String, String> entry : p.entrySet()) {
      if (!isClassKey(entry.getKey()) || entry.getValue() == null || entry.getValue().isEmpty()) {
        continue;
      }
      String name = entry.getKey().substring(CLASS_PREFIX.length());
      requireName(entry.getKey(), name);
      PolicyClass c = parseClass(entry.getKey(), name, entry.getValue(), model, buckets);
      if (c.name().equals(PolicyClass.DEFAULT)) {
        if (!c.explicit()) {
          throw invalid("class.default takes every Book no other class takes: it has no family or bucket");
        }
        defaultClass = c;
      } else {
        declared.put(name, c);
      }
    }
    if (declared.size() > MAX_CLASSES) {
      throw invalid("at most " + MAX_CLASSES + " policy classes besides default, got " + declared.size());
    }
    Map<String, String> byFamilyAndBucket = new HashMap<>();
    for (PolicyClass c : declared.values()) {
      if (c.explicit()) {
        continue;
      }
      String previous = byFamilyAndBucket.put(c.family() + "\u0000" + c.bucket(), c.name());
      if (previous != null) {
        throw invalid("policy classes '" + previous + "' and '" + c.name() + "' both take family "
            + (c.family() == null ? "(any)" : "'" + c.family() + "'") + " and bucket "
            + (c.bucket() == null ? "(any)" : "'" + c.bucket() + "'"));
      }
    }
    Map<String, String> given = new LinkedHashMap<>();
    for (String modelKey : defaultParameters().keySet()) {
      given.put(modelKey, p.get(modelKey));
    }
    TreeMap<String, String> classSpecs = new TreeMap<>();
    for (Map.Entry<String, String> entry : p.entrySet()) {
      if (isClassKey(entry.getKey()) && entry.getValue() != null && !entry.getValue().isEmpty()) {
        classSpecs.put(entry.getKey(), entry.getValue());
      }
    }
    given.putAll(classSpecs);
    return new QueueConfig(defaultClass, new ArrayList<>(declared.values()), buckets, aging, (int) Math.min(
        Integer.MAX_VALUE, maxPending), given);
  }

  private static PolicyClass parseClass(String key, String name, String spec, PolicyClass model,
      List<IslBucket> buckets) {
    Map<String, String> fields = new LinkedHashMap<>();
    for (String part : spec.split(",")) {
      String item = part.trim();
      if (item.isEmpty()) {
        continue;
      }
      int eq = item.indexOf('=');
      String field = eq < 0 ? item : item.substring(0, eq).trim();
      String value = eq < 0 ? "" : item.substring(eq + 1).trim();
      if (!CLASS_KEYS.contains(field)) {
        throw invalid("policy parameter '" + RoutingError.echo(key) + "': unknown class field '"
            + RoutingError.echo(field) + "'; known: " + CLASS_KEYS);
      }
      if (value.isEmpty() || fields.put(field, value) != null) {
        throw invalid("policy parameter '" + RoutingError.echo(key) + "': field '" + field
            + "' needs one value (field=value, comma separated)");
      }
    }
    String family = fields.get(FAMILY);
    if (family != null) {
      requireName(key + " " + FAMILY, family);
    }
    String bucket = fields.get(BUCKET);
    if (bucket != null && buckets.stream().noneMatch(b -> b.name().equals(bucket))) {
      throw invalid("policy parameter '" + RoutingError.echo(key) + "': bucket '" + RoutingError.echo(bucket)
          + "' is not one of " + QUEUE_ISL_BUCKETS);
    }
    String sub = key + " ";
    QueueOrder order = fields.containsKey(ORDER) ? order(sub + ORDER, fields.get(ORDER)) : model.order();
    BusyThresholds busy = new BusyThresholds(
        inheritLong(sub + PREFILL_TOKENS_THRESHOLD, fields, PREFILL_TOKENS_THRESHOLD, model.busy().prefillTokens()),
        inheritDouble(sub + THRESHOLD_FRAC, fields, THRESHOLD_FRAC, model.busy().prefillFrac(), false),
        inheritDouble(sub + DECODE_BLOCKS_THRESHOLD_FRAC, fields, DECODE_BLOCKS_THRESHOLD_FRAC,
            model.busy().decodeBlocksFrac(), false));
    Double ratio = inheritDouble(sub + BUSY_WORKER_RATIO, fields, BUSY_WORKER_RATIO, model.busyWorkerRatio(), true);
    long quantum = fields.containsKey(QUANTUM) ? quantum(sub + QUANTUM, fields.get(QUANTUM)) : model.quantum();
    return new PolicyClass(name, family, bucket, order, busy, ratio, quantum,
        inheritLong(sub + REQUESTS_PER_WORKER, fields, REQUESTS_PER_WORKER, model.requestsPerWorker()),
        inheritLong(sub + RAW_ISL_TOKENS_PER_WORKER, fields, RAW_ISL_TOKENS_PER_WORKER, model.rawIslTokensPerWorker()),
        inheritLong(sub + CACHED_TOKENS_PER_WORKER, fields, CACHED_TOKENS_PER_WORKER,
            model.cachedTokensPerWorker()));
  }

  private static Long inheritLong(String key, Map<String, String> fields, String field, Long inherited) {
    String raw = fields.get(field);
    if (raw == null) {
      return inherited;
    }
    return OFF.equals(raw) ? null : PolicyParameters.optionalAtLeast(key, raw, 0);
  }

  private static Double inheritDouble(String key, Map<String, String> fields, String field, Double inherited,
      boolean ratio) {
    String raw = fields.get(field);
    if (raw == null) {
      return inherited;
    }
    if (OFF.equals(raw)) {
      return null;
    }
    return ratio ? PolicyParameters.optionalRatio(key, raw) : PolicyParameters.optionalNonNegative(key, raw);
  }

  private static QueueOrder order(String key, String raw) {
    QueueOrder order = QueueOrder.fromWireName(raw);
    if (order == null) {
      throw bad(key, raw, "fcfs or wspt");
    }
    return order;
  }

  private static long quantum(String key, String raw) {
    long quantum = PolicyParameters.requiredLong(key, raw);
    if (quantum < 1 || quantum > 1L << 40) {
      throw bad(key, raw, "a number of uncached tokens from 1 to 2^40");
    }
    return quantum;
  }

  /** {@code floor:name,floor:name,...}: floors strictly ascending from 0. */
  private static List<IslBucket> buckets(String raw) {
    List<IslBucket> buckets = new ArrayList<>();
    if (raw == null || raw.isEmpty()) {
      return buckets;
    }
    for (String part : raw.split(",")) {
      String item = part.trim();
      int colon = item.indexOf(':');
      if (colon < 0) {
        throw bad(QUEUE_ISL_BUCKETS, raw, "min_tokens:name pairs, comma separated, e.g. 0:short,4096:long");
      }
      long floor = PolicyParameters.requiredLong(QUEUE_ISL_BUCKETS, item.substring(0, colon).trim());
      String name = item.substring(colon + 1).trim();
      requireName(QUEUE_ISL_BUCKETS, name);
      long previous = buckets.isEmpty() ? -1 : buckets.get(buckets.size() - 1).minTokens();
      if (buckets.isEmpty() ? floor != 0 : floor <= previous) {
        throw bad(QUEUE_ISL_BUCKETS, raw, "floors ascending strictly from 0");
      }
      if (buckets.stream().anyMatch(b -> b.name().equals(name))) {
        throw bad(QUEUE_ISL_BUCKETS, raw, "distinct bucket names");
      }
      buckets.add(new IslBucket(floor, name));
    }
    if (buckets.size() > MAX_BUCKETS) {
      throw bad(QUEUE_ISL_BUCKETS, raw, "at most " + MAX_BUCKETS + " buckets");
    }
    return buckets;
  }

  private static void requireName(String key, String name) {
    if (!NAME.matcher(name).matches()) {
      throw bad(key, name, "a name of letters, digits, '_', '.', '-' (at most " + MAX_NAME
          + " characters, starting with a letter or digit)");
    }
  }
}
