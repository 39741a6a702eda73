import Testing
import Foundation
import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif
@testable import IdPipeExtract
import IdPipeTestSupport

@Suite struct SideInputReaderTests {
    let legacy = "uid,given_name,family_name,consent\nu1, Anna ,Berg,true\nu2,,Kim,no\n"
    let deletions = "uid,requested_at,source\nu1,2025-03-01T00:00:00Z,app\nu1,2025-01-01T00:00:00Z,support\nu3,2025-02-01T00:00:00Z,\n"
    let tokens = """
        {"uid":"u1","provider":"apple.com","type":"refresh_token","token":"r-secret-1","captured_at":"2025-01-01T00:00:00Z"}
        {"uid":"u1","provider":"facebook.com","facebook_id":"10","login":"classic","token":"fb-secret"}

        {"uid":"u4","provider":"facebook.com","facebook_id":"20","login":"limited"}
        """

    /// A path is taken from the pipeline's (or the plan's) folder unless it is absolute; from `/` it had two slashes.
    @Test(arguments: [("a.csv", "/x", "/x/a.csv"), ("a.csv", "/x/", "/x/a.csv"), ("work/a.csv", "/", "/work/a.csv"),
                      ("/abs.csv", "/x", "/abs.csv"), ("a.csv", "", "a.csv"), ("a.csv", ".", "a.csv"), ("./tmp/./b.csv", "/", "/tmp/b.csv"),
                      ("a//b.csv", "x", "x/a/b.csv"), ("../a.csv", "", "../a.csv"), ("../../a.csv", "/", "/../../a.csv")])
    func pathsAreResolvedFromTheirFolder(path: String, base: String, expected: String) {
        #expect(SideInputReader.resolve(path, base) == expected)
    }

    /// `folder/..` and `folder/.` are taken out where the folder is one: not where it is a link (whose `..` is its
    /// target's parent), a file, or nothing at all (the system would refuse the path, and so must the plan).
    @Test func aFolderAndItsParentAreTakenOutOnlyWhereTheFolderIsThere() throws {
        let root = TemporaryFile.directory("tidy")
        for folder in ["Pipelines", "Samples", "deep/er"] { try FileManager.default.createDirectory(atPath: "\(root)/\(folder)", withIntermediateDirectories: true) }
        #expect(symlink("deep/er", "\(root)/link") == 0)
        #expect(FileManager.default.createFile(atPath: "\(root)/file", contents: Data()))
        let cases = [("../Samples/a.json", "\(root)/Pipelines", "\(root)/Samples/a.json"),
                     ("../../Samples/a.json", "\(root)/deep/er", "\(root)/Samples/a.json"),
                     ("../x/", "\(root)/Pipelines", "\(root)/x/"),
                     ("../a.json", "\(root)/link", "\(root)/link/../a.json"),
                     ("../a.json", "\(root)/missing", "\(root)/missing/../a.json"),
                     ("../a.json", "\(root)/Pipelines/../link", "\(root)/link/../a.json"),
                     // A file is no folder: the system refuses `file/.` and `file/..`, and so must the tidied path.
                     ("file/.", root, "\(root)/file/."), ("file/../a.json", root, "\(root)/file/../a.json"),
                     ("./Samples/./a.json", "\(root)/Pipelines/..", "\(root)/Samples/a.json")]
        for (path, base, expected) in cases { #expect(SideInputReader.resolve(path, base) == expected, "\(path) from \(base)") }
        // Relative: a name that is not there is not taken out.
        #expect(SideInputReader.resolve("../a.json", "no-such-folder-\(UInt64.random(in: 0...UInt64.max))").hasSuffix("/../a.json"))
    }

    /// All four files, read at the same time, each into its own table.
    @Test func readsEveryInput() throws {
        let config = InputsConfig(
            legacyNames: TemporaryFile.write(legacy, name: "names.csv"), deletionRequests: TemporaryFile.write(deletions, name: "deletions.csv"),
            storedTokens: TemporaryFile.write(tokens, name: "tokens.jsonl"), protectedAccounts: TemporaryFile.write("u9 # staff\n# none\n\n", name: "protected.txt"))
        let inputs = try SideInputReader.load(config, relativeTo: "")
        #expect(inputs.legacyNames.count == 2)
        #expect(inputs.legacyNames["u1"] == LegacyName(givenName: "Anna", familyName: "Berg", consent: true))
        #expect(inputs.legacyNames["u2"] == LegacyName(givenName: "", familyName: "Kim", consent: false))
        // The earliest request counts; an empty source is "unspecified".
        #expect(inputs.deletionRequests["u1"] == DeletionRequest(requestedAt: 1_735_689_600_000, source: "support"))
        #expect(inputs.deletionRequests["u3"]?.source == "unspecified")
        // The second request of u1 is counted, for the plan to say (it went without a word).
        #expect(inputs.repeatedDeletionRequests == 1)
        #expect(inputs.credentials["u1"]?.apple?.kind == .refreshToken)
        #expect(inputs.credentials["u1"]?.apple?.token.value == "r-secret-1")
        #expect(inputs.credentials["u1"]?.facebook?.accessToken?.value == "fb-secret")
        #expect(inputs.credentials["u4"]?.facebook?.login == .limited)
        #expect(inputs.protectedIds == ["u9"])
    }

    /// Columns are found by their header names, in any order and among others; flags in any case.
    @Test func columnsAreFoundByName() throws {
        let path = TemporaryFile.write("consent,note,family_name,uid,given_name\nYES,x, Berg ,u1,Anna\nFalse,\"y, z\",Kim,u2,\n", name: "names.csv")
        let names = try SideInputReader.legacyNames(path)
        #expect(names.count == 2)
        #expect(names["u1"] == LegacyName(givenName: "Anna", familyName: "Berg", consent: true))
        #expect(names["u2"] == LegacyName(givenName: "", familyName: "Kim", consent: false))
    }

    /// The row count a table reserves: the lines, with or without a newline at the end; 0 for a file that is not there
    /// or is not a regular file.
    @Test func countsLinesForTheTablesRoom() {
        #expect(SideInputReader.lineCount(TemporaryFile.write("a\nb\nc\n", name: "three.csv")) == 4)
        #expect(SideInputReader.lineCount(TemporaryFile.write("a\nb\nc", name: "three.csv")) == 3)
        #expect(SideInputReader.lineCount(TemporaryFile.write(String(repeating: "x\n", count: 1_500_000), name: "long.csv")) == 1_500_001)
        #expect(SideInputReader.lineCount(TemporaryFile.directory("none") + "/missing.csv") == 0)
        // Not a regular file (a folder here; a pipe would be emptied before the reader read it).
        #expect(SideInputReader.lineCount(TemporaryFile.directory("folder")) == 0)
    }

    /// Stored tokens given through a pipe (as `<(zcat tokens.gz)` gives them) are read whole: only a regular file's
    /// lines are counted first, since counting a pipe's would empty it before the reader read it.
    @Test func storedTokensThroughAPipeAreReadWhole() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let bytes = Array(tokens.utf8)
        let written = write(ends[1], bytes, bytes.count)
        close(ends[1])
        try #require(written == bytes.count)
        let credentials = try SideInputReader.storedTokens("/dev/fd/\(ends[0])")
        #expect(credentials.count == 2)
        #expect(credentials["u1"]?.apple?.token.value == "r-secret-1")
        #expect(credentials["u4"]?.facebook?.login == .limited)
    }

    /// Bad rows stop the run with the file, the line and the column; a token is never quoted.
    @Test(arguments: [
        ("names", "uid,given_name,family_name,consent\nu1,A,B,true\nu1,C,D,false\n", ":3: uid: 'u1' appears twice"),
        ("names", "uid,given_name,family_name,consent\njohn.doe@example.com,A,B,true\njohn.doe@example.com,C,D,false\n",
         ":3: uid: 'j•••@example.com' appears twice"),
        ("names", "uid,given_name,family_name,consent\nu1,A,B,maybe\n", ":2: consent: 'm•••' is not true or false"),
        ("names", "consent,uid,given_name,family_name\nMaybe,u1,A,B\n", ":2: consent: 'M•••' is not true or false"),
        ("names", "uid,given,family_name,consent\n", ":1: the header has no column 'given_name'"),
        ("names", "uid,given_name,family_name,consent,uid\nu1,A,B,true,u2\n", ":1: the header has the column 'uid' twice"),
        ("deletions", "uid,requested_at,source\n,2025-01-01T00:00:00Z,app\n", ":2: uid: is empty"),
        ("deletions", "uid,requested_at,source\nu1,yesterday,app\n", ":2: requested_at: 'y•••' is not an RFC 3339 time"),
        // Masked, a wrong time shows its shape only: what is wrong with it is said.
        ("deletions", "uid,requested_at,source\nu1,2025-13-01T00:00:00Z,app\n",
         ":2: requested_at: '####-##-##T##:##:##Z' is not an RFC 3339 time: its month is not 01 to 12"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-secret\",\"captured_at\":\"2025-02-30T00:00:00Z\"}\n",
         ":1: captured_at: expected an RFC 3339 time (its day is not one of its month's)"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"id_token\",\"token\":\"t-secret\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: type: expected refresh_token, access_token or authorization_code"),
        ("tokens", "\n{\"uid\":\"u1\",\"provider\":\"apple.com\",\"token\":\"t-secret\n", ":2: token: unexpected end of input"),
        // A token pasted into the provider field is not echoed; a provider id is.
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"t-secret.AbC-987\"}\n", ":1: provider: expected apple.com or facebook.com, found another value (not shown)"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"google.com\"}\n", ":1: provider: expected apple.com or facebook.com, found 'google.com'"),
        // A key given twice is refused, named when it is one of the known ones: the last uid used to win.
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-secret\",\"uid\":\"u2\"}\n", ":1: uid: appears twice on the line"),
        ("tokens", "{\"uid\":\"u1\",\"t-secret\":\"1\",\"t-secret\":\"2\"}\n", ":1: a key appears twice on the line"),
        // A token or id with white space at an end is a copy-paste slip that apply would send as it is; never quoted.
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\" t-secret\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: token: has white space or a control character at its start or end"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-secret\\n\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: token: has white space or a control character at its start or end"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"facebook.com\",\"facebook_id\":\"123 \",\"login\":\"classic\"}\n",
         ":1: facebook_id: has white space or a control character at its start or end"),
        // Within the value too: it was sent.
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-se\\u0000cret\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: token: has a character no token has (a space, a control or invisible character, or one beyond ASCII)"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-se\\u0085cret\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: token: has a character no token has"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-se\\u200bcret\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: token: has a character no token has"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-se cret\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: token: has a character no token has"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"facebook.com\",\"facebook_id\":\"12\\u001b34\",\"login\":\"classic\"}\n",
         ":1: facebook_id: has a character no id has"),
        // A token in the id's field was kept in the store and quoted by apply's refusal: an id is digits.
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"facebook.com\",\"facebook_id\":\"EAAB-t-secret\",\"login\":\"classic\"}\n",
         ":1: facebook_id: an app-scoped id is digits only"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"facebook.com\",\"facebook_id\":\"123\",\"login\":\"classic\",\"token\":\"t-secret\\t\"}\n",
         ":1: token: has white space or a control character at its start or end"),
        // A token that is no string was taken as its text (`true`), and sent.
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":true,\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: token: expected a string, found a number or true/false"),
        ("tokens", "{\"uid\":12,\"provider\":\"apple.com\"}\n", ":1: uid: expected a string, found a number or true/false"),
        ("tokens", "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"token\":{\"t-secret\":1}}\n", ":1: token: expected a string, found an object or an array"),
        // An invisible character in an id matched no account, and the row was lost without a word.
        ("tokens", "{\"uid\":\"u1\\u200b\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-secret\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n",
         ":1: uid: an invisible character (U+200B) in the id"),
        ("deletions", "uid,requested_at,source\nu1\u{200B},2025-01-01T00:00:00Z,app\n", ":2: uid: an invisible character (U+200B) in the id"),
        ("names", "uid,given_name,family_name,consent\nu\u{0}1,A,B,true\n", ":2: uid: an invisible character (U+0) in the id"),
        ("deletions", "uid,requested_at,source\n" + String(repeating: "u", count: 129) + ",2025-01-01T00:00:00Z,app\n",
         ":2: uid: longer than 128 bytes, which no account id is"),
    ])
    func badRowsNameTheirPlace(file: String, text: String, expected: String) throws {
        let path = TemporaryFile.write(text, name: "\(file).txt")
        var config = InputsConfig()
        switch file {
        case "names": config.legacyNames = path
        case "deletions": config.deletionRequests = path
        default: config.storedTokens = path
        }
        let error = #expect(throws: InputError.self) { try SideInputReader.load(config, relativeTo: "") }
        let description = error?.description ?? ""
        #expect(description.hasPrefix(path + expected), "\(description)")
        #expect(!description.contains("t-secret"))
    }

    /// Lines come without their `\n` or `\r\n`, numbered from 1, blank ones included, the last one with or without
    /// its newline.
    @Test(arguments: [
        ("a\nb\n", [("a", 1), ("b", 2)]),
        ("a\r\n\r\nb", [("a", 1), ("", 2), ("b", 3)]),
        ("\n\n", [("", 1), ("", 2)]),
        ("", []),
        ("x\ry\n", [("x\ry", 1)]),
    ])
    func linesLoseTheirEndings(text: String, expected: [(String, Int)]) throws {
        var lines: [(String, Int)] = []
        try SideInputReader.forEachLineBytes(TemporaryFile.write(text, name: "lines.txt")) { bytes, number in
            lines.append((String(decoding: bytes, as: UTF8.self), number))
        }
        #expect(lines.map(\.0) == expected.map(\.0))
        #expect(lines.map(\.1) == expected.map(\.1))
    }

    /// A value that is not UTF-8 names the file, the line and the column.
    @Test func invalidUTF8NamesTheColumn() throws {
        let path = TemporaryFile.write(Array("uid,given_name,family_name,consent\nu1,A,B,true\nu2,".utf8) + [0xC3, 0x28] + Array(",C,true\n".utf8),
                                       name: "names.csv")
        let error = #expect(throws: InputError.self) { try SideInputReader.load(InputsConfig(legacyNames: path), relativeTo: "") }
        #expect(error?.description == path + ":3: given_name: is not valid UTF-8")
    }

    /// With several bad files, the error is the first one's in the pipeline's order, whichever thread finishes first,
    /// and though the larger file (here the deletions) is read first.
    @Test func theFirstBadFileInOrderIsReported() throws {
        let names = TemporaryFile.write("uid,given_name,family_name,consent\nu1,A,B,maybe\n", name: "names.csv")
        let manyRows = (0..<2_000).map { "d\($0),2025-01-01T00:00:00Z,app\n" }.joined()
        let deletions = TemporaryFile.write("uid,requested_at,source\n" + manyRows + "u1,never,app\n", name: "deletions.csv")
        for _ in 0..<20 {
            let error = #expect(throws: InputError.self) {
                try SideInputReader.load(InputsConfig(legacyNames: names, deletionRequests: deletions), relativeTo: "")
            }
            #expect(error?.path == names)
        }
    }

    /// A uid with spaces around it is trimmed, as the tables' ids are (its token passed for no account's).
    @Test func storedTokenIdsAreTrimmed() throws {
        let line = "{\"uid\":\" u1 \",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"r-1\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n"
        let credentials = try SideInputReader.storedTokens(TemporaryFile.write(line, name: "spaced.jsonl"))
        #expect(credentials["u1"]?.apple?.token.value == "r-1")
    }

    /// Values are read where they lie in the line, or decoded when they have escapes; a number is its text, a null no
    /// value at all, and members come in any order.
    @Test func storedTokenValuesAreDecodedAsJSON() throws {
        let text = """
            {"captured_at":"2025-01-01T00:00:00Z","token":"r\\/1\\u0041","type":"access_token","provider":"apple\\u002ecom","uid":"u\\u0031"}
            {"uid":"u2","provider":"facebook.com","facebook_id":12345,"login":"limited","token":null,"note":true}
            {"uid":"u3","provider":"facebook.com","facebook_id":"7","login":"classic","token":""}
            """
        let credentials = try SideInputReader.storedTokens(TemporaryFile.write(text, name: "escaped.jsonl"))
        #expect(credentials.count == 3)
        #expect(credentials["u1"]?.apple?.kind == .accessToken)
        #expect(credentials["u1"]?.apple?.token.value == "r/1A")
        #expect(credentials["u1"]?.apple?.capturedAt == 1_735_689_600_000)
        #expect(credentials["u2"]?.facebook == StoredFacebookLogin(facebookId: "12345", login: .limited, accessToken: nil))
        #expect(credentials["u3"]?.facebook?.accessToken == nil)
    }

    /// A second Apple token for an account is named as such even when its own fields are wrong too, and a member
    /// whose value is null counts as absent: the checks run in the order they always did.
    @Test(arguments: [
        ("{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"id_token\"}", ":3: uid: a second apple.com token for an account an earlier line has one for"),
        ("{\"uid\":\"u1\",\"provider\":\"facebook.com\",\"facebook_id\":\"\"}", ":3: uid: a second facebook.com entry for an account an earlier line has one for"),
        ("{\"uid\":\"u5\",\"provider\":\"facebook.com\",\"facebook_id\":\"\"}", ":3: facebook_id: is missing"),
        ("{\"uid\":null,\"provider\":\"apple.com\"}", ":3: uid: is missing"),
        ("{\"uid\":\"u5\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-secret\",\"captured_at\":\"soon\"}",
         ":3: captured_at: expected an RFC 3339 time"),
        ("{\"uid\":\"u5\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"t-secret\",\"captured_at\":\"2025-01-01T00:00:00Z\"} x",
         ":3: not a JSON object: text after the object"),
    ])
    func storedTokenChecksKeepTheirOrder(line: String, expected: String) throws {
        let path = TemporaryFile.write(tokens.split(separator: "\n").prefix(2).joined(separator: "\n") + "\n" + line + "\n", name: "second.jsonl")
        let error = #expect(throws: InputError.self) { try SideInputReader.storedTokens(path) }
        #expect(error?.description.hasPrefix(path + expected) == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("t-secret") == false)
    }

    /// A line with its values mixed up has a token where the uid or a key belongs: the messages name neither (the
    /// uid of a second token, a key that is not the file's, were quoted). Another key's value may be anything; one
    /// of the file's keys, written without quotes, is said to want them.
    @Test(arguments: [
        ("{\"uid\":\"t-secret\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"u1\",\"captured_at\":\"2025-01-01T00:00:00Z\"}\n"
            + "{\"uid\":\"t-secret\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"u1\",\"captured_at\":\"2025-01-01T00:00:00Z\"}",
         ":2: uid: a second apple.com token for an account an earlier line has one for"),
        ("{\"uid\":\"u1\",\"t-secret\":{\"x\":}}", ":1: the value of a key idpipe does not read: "),
        ("{\"uid\":\"u1\",\"t-secret\":tru}", ":1: the value of a key idpipe does not read: "),
        ("{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":a-t-secret}", ":1: token: expected a string in double quotes"),
        ("{\"uid\":\"u1\",t-secret:1}", ":1: not a JSON object: expected a key in double quotes"),
    ])
    func mixedUpLinesNameNoToken(text: String, expected: String) throws {
        let path = TemporaryFile.write(text + "\n", name: "mixed.jsonl")
        let error = #expect(throws: InputError.self) { try SideInputReader.storedTokens(path) }
        #expect(error?.description.hasPrefix(path + expected) == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("t-secret") == false)
    }

    /// Keys the file does not use are ignored, whatever their value: an object there stopped the run.
    @Test func otherKeysMayHoldAnyValue() throws {
        let line = "{\"uid\":\"u1\",\"provider\":\"apple.com\",\"type\":\"refresh_token\",\"token\":\"r1\",\"captured_at\":\"2025-01-01T00:00:00Z\","
            + "\"meta\":{\"source\":[1,{\"a\":null}]},\"n\":-2.5e3}\n"
        let credentials = try SideInputReader.storedTokens(TemporaryFile.write(line, name: "other-keys.jsonl"))
        #expect(credentials["u1"]?.apple?.token.value == "r1")
    }

    /// A byte-order mark before the first line of the stored tokens is skipped, as in the other inputs.
    @Test func storedTokensMayStartWithAByteOrderMark() throws {
        let credentials = try SideInputReader.storedTokens(TemporaryFile.write([0xEF, 0xBB, 0xBF] + Array(tokens.utf8), name: "bom.jsonl"))
        #expect(credentials["u1"]?.apple?.token.value == "r-secret-1")
    }

    /// A protected id is read as written, or the run stops at its line: before, a byte-order mark, a broken byte, quotes
    /// or a comma list made ids that matched no account, and the accounts meant were planned for deletion unprotected.
    @Test func protectedIdsAreTakenAsWrittenOrRefused() throws {
        let bom = TemporaryFile.write([0xEF, 0xBB, 0xBF] + Array("u1\n  u2  # staff\n".utf8), name: "protected-bom.txt")
        #expect(try SideInputReader.protectedAccounts(bom) == ["u1", "u2"])
        let cases: [([UInt8], String)] = [
            (Array("u1\nu2".utf8) + [0xFF] + Array("\n".utf8), "protected.txt:2: is not valid UTF-8"),
            (Array("\"u1\"\n".utf8), "protected.txt:1: \" in the id: give one uid a line, as it is (no quotes, commas or spaces)"),
            (Array("u1\nu2,u3\n".utf8), "protected.txt:2: , in the id"),
            (Array("u1 u2\n".utf8), "protected.txt:1: a space in the id"),
            // Characters that do not show: a zero-width space, a byte-order mark inside (two files put together), a NUL.
            (Array("u1\nu2\u{200B}\n".utf8), "protected.txt:2: an invisible character (U+200B) in the id"),
            ([0xEF, 0xBB, 0xBF] + Array("u1\n".utf8) + [0xEF, 0xBB, 0xBF] + Array("u2\n".utf8), "protected.txt:2: an invisible character (U+FEFF) in the id"),
            (Array("u1".utf8) + [0] + Array("\n".utf8), "protected.txt:1: an invisible character (U+0) in the id"),
        ]
        for (bytes, message) in cases {
            let path = TemporaryFile.write(bytes, name: "protected.txt")
            #expect { try SideInputReader.protectedAccounts(path) } throws: { error in
                "\(error)".hasSuffix(message) || "\(error)".contains(message + ":")
            }
        }
    }

    /// A read that fails is an error naming the file, not the end of it: the lines read before would have passed for
    /// the whole list of tokens (or of protected accounts). A folder opens as a file but fails on its first read.
    @Test func aFailedReadIsNotTakenForTheEnd() throws {
        let folder = TemporaryFile.directory("unreadable")
        for read in [{ _ = try SideInputReader.storedTokens(folder) }, { _ = try SideInputReader.protectedAccounts(folder) }] {
            #expect { try read() } throws: { error in
                "\(error)".contains("cannot read line 1: Is a directory") && (error as? InputError)?.path == folder
            }
        }
    }
}

@Suite struct FileFingerprintTests {
    /// Hashing the bytes a batch holds gives what hashing the file gives; bytes that do not cover what is left to hash
    /// (a gap before them, or too few) are read from the file instead.
    @Test func heldBytesHashAsTheFile() throws {
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) }
        let path = TemporaryFile.write(bytes, name: "input.bin")
        let reference = FileFingerprint(path: path)
        let held = FileFingerprint(path: path)
        for (offset, window) in [(10_000, 0..<10_000), (25_000, 5_000..<30_000), (40_000, 30_000..<35_000), (40_000, 41_000..<50_000),
                                 (100_000, 40_000..<100_000)] {
            let expected = try reference.advance(to: Int64(offset))
            #expect(try held.advance(to: Int64(offset), holding: Array(bytes[window]), from: Int64(window.lowerBound)) == expected, "\(offset)")
        }
        #expect(try held.advance(to: 100_000) == (try FileFingerprint.digest(of: path)))
    }
}
