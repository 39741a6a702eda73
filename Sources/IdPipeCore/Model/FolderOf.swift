/// The folder that holds `path`: "." for a bare name, "/" for a file at the root (the store syncs that folder once
/// apply begins, the commands make it and read a pipeline's inputs relative to it).
public func folder(of path: String) -> String {
    path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
}
