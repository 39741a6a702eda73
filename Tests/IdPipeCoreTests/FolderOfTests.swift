import Testing
@testable import IdPipeCore

/// The folder of a path: the commands read a pipeline's inputs relative to it, and apply syncs the store's.
@Test(arguments: [("out/state.sqlite", "out"), ("state.sqlite", "."), ("/state.sqlite", "/"), ("/srv/run/state.sqlite", "/srv/run"),
                  ("./p.yaml", "."), ("a/b/", "a/b")])
func folderOfAPath(_ path: String, _ expected: String) {
    #expect(folder(of: path) == expected, "\(path)")
}
