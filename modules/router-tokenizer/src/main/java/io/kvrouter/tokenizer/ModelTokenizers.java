package io.kvrouter.tokenizer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The models of a {@link ModelsFile}, by name, with their tokenizers loaded. {@link #reload()} reads the file again
 * and swaps in the new set only when every entry loads; a broken file (or a tokenizer that does not load) leaves the
 * current models in place and is reported in the result and {@link #lastError()}. Models whose files did not change
 * keep their loaded tokenizer across reloads; the tokenizers of removed or changed models are closed after the swap
 * (an encode still running on one finishes first; one started later fails, and the caller looks the model up again).
 *
 * <p>Thread-safe: lookups read an immutable map through a volatile field; reloads are serialised.
 */
public final class ModelTokenizers implements AutoCloseable {

  /** A registered model: its tokenizer, or none in approximate mode. */
  public record Model(String name, ModelTokenizer tokenizer, ModelsFile.Entry entry) {
    public boolean approximate() {
      return tokenizer == null;
    }

    /** The chat template, or null (approximate mode, or a tokenizer without one). */
    public ChatTemplate chatTemplate() {
      return tokenizer == null ? null : tokenizer.chatTemplate();
    }
  }

  /** What a reload did: applied (with the models added, removed and reloaded), or not, and why. */
  public record ReloadResult(boolean applied, String error, Set<String> added, Set<String> removed,
                             Set<String> reloaded) {
    static ReloadResult failed(String error) {
      return new ReloadResult(false, error, Set.of(), Set.of(), Set.of());
    }
  }

  private record Loaded(Model model, String fingerprint) {}

  private final Path file;
  private volatile Map<String, Loaded> models;
  private volatile String lastError;

  private ModelTokenizers(Path file, Map<String, Loaded> models) {
    this.file = file;
    this.models = models;
  }

  /** Reads the file and loads every model; throws when any of it is unusable (nothing is left open then). */
  public static ModelTokenizers load(Path file) throws ModelsFileException {
    ModelsFile parsed = ModelsFile.read(file);
    Map<String, Loaded> loaded = loadAll(parsed, Map.of());
    return new ModelTokenizers(file, loaded);
  }

  public Path file() {
    return file;
  }

  /** The model of that name, or null when the file does not list it. */
  public Model get(String name) {
    Loaded loaded = models.get(name);
    return loaded == null ? null : loaded.model();
  }

  public Set<String> names() {
    return new TreeSet<>(models.keySet());
  }

  /** Why the last reload was refused, or null when it was applied (or none was made). */
  public String lastError() {
    return lastError;
  }

  /** Reads the file again; see the class comment. */
  public synchronized ReloadResult reload() {
    Map<String, Loaded> current = models;
    Map<String, Loaded> next;
    try {
      next = loadAll(ModelsFile.read(file), current);
    } catch (ModelsFileException e) {
      lastError = e.getMessage();
      return ReloadResult.failed(e.getMessage());
    }
    Set<String> added = new TreeSet<>();
    Set<String> reloaded = new TreeSet<>();
    for (Map.Entry<String, Loaded> entry : next.entrySet()) {
      Loaded before = current.get(entry.getKey());
      if (before == null) {
        added.add(entry.getKey());
      } else if (before != entry.getValue()) {
        reloaded.add(entry.getKey());
      }
    }
    Set<String> removed = new TreeSet<>(current.keySet());
    removed.removeAll(next.keySet());
    models = next;
    lastError = null;
    closeUnused(current, next);
    return new ReloadResult(true, null, added, removed, reloaded);
  }

  private static void closeUnused(Map<String, Loaded> old, Map<String, Loaded> kept) {
    Set<Loaded> live = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    live.addAll(kept.values());
    for (Loaded loaded : old.values()) {
      if (!live.contains(loaded) && loaded.model().tokenizer() != null) {
        loaded.model().tokenizer().close();
      }
    }
  }

  /** Loads every entry, reusing those of {@code current} whose files did not change; all or nothing. */
  private static Map<String, Loaded> loadAll(ModelsFile parsed, Map<String, Loaded> current)
      throws ModelsFileException {
    Map<String, Loaded> next = new LinkedHashMap<>();
    List<ModelTokenizer> opened = new ArrayList<>();
    Map<String, Loaded> byFingerprint = new HashMap<>();
    for (Loaded loaded : current.values()) {
      byFingerprint.put(loaded.fingerprint(), loaded);
    }
    try {
      for (ModelsFile.Entry entry : parsed.models()) {
        String fingerprint = fingerprint(entry);
        Loaded reuse = byFingerprint.get(fingerprint);
        if (reuse != null && reuse.model().name().equals(entry.name())) {
          next.put(entry.name(), reuse);
          continue;
        }
        ModelTokenizer tokenizer = null;
        if (entry.tokenizer() != null) {
          try {
            tokenizer = ModelTokenizer.load(entry.tokenizer(), entry.chatTemplate());
          } catch (IOException | TemplateException e) {
            throw new ModelsFileException(parsed.file() + ": model " + Inputs.echo(entry.name()) + ": "
                + e.getMessage(), e);
          }
          opened.add(tokenizer);
        }
        next.put(entry.name(), new Loaded(new Model(entry.name(), tokenizer, entry), fingerprint));
      }
    } catch (ModelsFileException | RuntimeException e) {
      opened.forEach(ModelTokenizer::close);
      throw e;
    }
    return Map.copyOf(next);
  }

  /** The entry and the size and modification time of every file its tokenizer reads. */
  private static String fingerprint(ModelsFile.Entry entry) {
    StringBuilder key = new StringBuilder(entry.name()).append('\0');
    if (entry.tokenizer() == null) {
      return key.append("approximate").toString();
    }
    Path json = Files.isDirectory(entry.tokenizer()) ? entry.tokenizer().resolve("tokenizer.json")
        : entry.tokenizer();
    Path dir = json.toAbsolutePath().getParent();
    List<Path> files = new ArrayList<>(List.of(json, dir.resolve("tokenizer_config.json"),
        dir.resolve("chat_template.jinja")));
    if (entry.chatTemplate() != null) {
      files.add(entry.chatTemplate());
    }
    for (Path f : files) {
      key.append(f).append('@');
      try {
        key.append(Files.size(f)).append('/').append(Files.getLastModifiedTime(f).toMillis());
      } catch (IOException e) {
        key.append("absent");
      }
      key.append('\0');
    }
    return key.toString();
  }

  @Override
  public synchronized void close() {
    closeUnused(models, Map.of());
    models = Map.of();
  }
}
