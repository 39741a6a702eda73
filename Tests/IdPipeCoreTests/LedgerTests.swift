import Testing
@testable import IdPipeCore

/// The CSV ledger's fields: RFC 4180 quoting, and a `'` before what a spreadsheet would run as a formula.
@Suite struct LedgerTests {
    @Test(arguments: [
        ("", ""),
        ("plain", "plain"),
        ("a,b", "\"a,b\""),
        ("say \"hi\"", "\"say \"\"hi\"\"\""),
        ("two\nlines", "\"two\nlines\""),
        ("cr\r", "\"cr\r\""),
        ("=SUM(A1)", "'=SUM(A1)"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@home", "'@home"),
        ("=a,b", "\"'=a,b\""),
        ("Thérèse, García", "\"Thérèse, García\""),
        ("山田", "山田"),
    ])
    func fieldsAreQuotedAsRFC4180Says(_ field: String, _ expected: String) {
        var out: [UInt8] = []
        CSVLedger.append(field, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    @Test(arguments: [false, true])
    func aLineHasEveryColumnInTheHeaderOrder(_ reveal: Bool) {
        let action = ReportAction(sequence: 12, uid: "u,1", kind: "update-name", state: "planned", detail: "name from legacy", reason: nil,
                                  value: "Jane \"JJ\" Doe", attempts: 2, result: "done", policy: nil, resent: 1, wouldDelete: nil,
                                  counted: nil, deleted: 3)
        var out: [UInt8] = []
        var masked: [UInt8] = []
        CSVLedger.appendLine(action, masking: Masking(reveal: reveal), masked: &masked, to: &out)
        let value = reveal ? "\"Jane \"\"JJ\"\" Doe\"" : "\"J••• \"\"••• D•••\""
        #expect(String(decoding: out, as: UTF8.self) == "12,\"u,1\",update-name,identitytoolkit,planned,name from legacy,,\(value),done,,2,1,,,3\n")
        #expect(CSVLedger.header.split(separator: ",").count == 15)
    }

    /// A service's words in the reason or the result are written with their control characters as codes: `cat ledger.csv`
    /// sent them to the terminal.
    @Test func aServicesControlCharactersAreShownAsCodes() {
        let action = ReportAction(sequence: 4, uid: "u4", kind: "revoke-facebook", state: "failed", detail: "facebook", reason: "graph_100: no\u{1B}]0;x\u{7}",
                                  value: nil, attempts: 1, result: "HTTP 400\u{1B}[2J", policy: nil, resent: 0, wouldDelete: nil, counted: nil, deleted: nil)
        var out: [UInt8] = []
        var masked: [UInt8] = []
        CSVLedger.appendLine(action, masking: Masking(reveal: false), masked: &masked, to: &out)
        let line = String(decoding: out, as: UTF8.self)
        #expect(!line.unicodeScalars.contains("\u{1B}") && line.contains(#"graph_100: no\u{1B}]0;x\u{7}"#) && line.contains(#"HTTP 400\u{1B}[2J"#), "\(line)")
    }

    /// A path deletion fills the columns the line above leaves empty: reason, policy, would_delete and counted.
    @Test func aPathDeletionFillsItsCountColumns() {
        let action = ReportAction(sequence: 3, uid: "u3", kind: "delete-firestore", state: "failed", detail: "users/{uid}", reason: "-1 left",
                                  value: nil, attempts: 1, result: nil, policy: "when_revocation_fails: delete", resent: 0, wouldDelete: 7,
                                  counted: "users/{uid}: 7", deleted: nil)
        var out: [UInt8] = []
        var masked: [UInt8] = []
        CSVLedger.appendLine(action, masking: Masking(reveal: false), masked: &masked, to: &out)
        #expect(String(decoding: out, as: UTF8.self)
            == "3,u3,delete-firestore,firestore,failed,users/{uid},'-1 left,,,when_revocation_fails: delete,1,0,7,users/{uid}: 7,\n")
    }
}
