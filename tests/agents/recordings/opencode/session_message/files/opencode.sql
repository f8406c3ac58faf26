BEGIN TRANSACTION;
CREATE TABLE `account` (
          `id` text PRIMARY KEY,
          `email` text NOT NULL,
          `url` text NOT NULL,
          `access_token` text NOT NULL,
          `refresh_token` text NOT NULL,
          `token_expiry` integer,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL
        );
CREATE TABLE `account_state` (
          `id` integer PRIMARY KEY,
          `active_account_id` text,
          `active_org_id` text,
          CONSTRAINT `fk_account_state_active_account_id_account_id_fk` FOREIGN KEY (`active_account_id`) REFERENCES `account`(`id`) ON DELETE SET NULL
        );
CREATE TABLE `control_account` (
          `email` text NOT NULL,
          `url` text NOT NULL,
          `access_token` text NOT NULL,
          `refresh_token` text NOT NULL,
          `token_expiry` integer,
          `active` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `control_account_pk` PRIMARY KEY(`email`, `url`)
        );
CREATE TABLE `credential` (
          `id` text PRIMARY KEY,
          `integration_id` text,
          `label` text NOT NULL,
          `value` text NOT NULL,
          `connector_id` text,
          `method_id` text,
          `active` integer,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL
        );
CREATE TABLE `data_migration` (
          `name` text PRIMARY KEY,
          `time_completed` integer NOT NULL
        );
CREATE TABLE `event` (
          `id` text PRIMARY KEY,
          `aggregate_id` text NOT NULL,
          `seq` integer NOT NULL,
          `type` text NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_event_aggregate_id_event_sequence_aggregate_id_fk` FOREIGN KEY (`aggregate_id`) REFERENCES `event_sequence`(`aggregate_id`) ON DELETE CASCADE
        );
INSERT INTO "event" VALUES('evt_24e904229001OAbPG4X1czNBeB','ses_db16fbe2bffekre8zo0ySuQ0fg',0,'session.created.1','{"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","info":{"id":"ses_db16fbe2bffekre8zo0ySuQ0fg","slug":"quiet-orchid","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-12-07T03:33:26.695Z","version":"1.18.33","time":{"created":1796614406695,"updated":1796614406695}}}');
INSERT INTO "event" VALUES('evt_24e904841001RvAvEG4JijxhTj','ses_db16fbe2bffekre8zo0ySuQ0fg',1,'session.next.prompt.admitted.1','{"timestamp":1796614408257,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","messageID":"msg_24e904840001m9av1ZaviK1JSd","prompt":{"text":"List the files here and tell me what README.md says."},"delivery":"steer"}');
INSERT INTO "event" VALUES('evt_24e90487f0014jcrS6EP52ekTr','ses_db16fbe2bffekre8zo0ySuQ0fg',2,'session.next.prompted.1','{"timestamp":1796614408257,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","messageID":"msg_24e904840001m9av1ZaviK1JSd","prompt":{"text":"List the files here and tell me what README.md says."},"delivery":"steer"}');
INSERT INTO "event" VALUES('evt_24e9049980024AIV4D50qSky7j','ses_db16fbe2bffekre8zo0ySuQ0fg',3,'session.next.step.started.1','{"timestamp":1796614408600,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904998001VmqIHzur8fQZ45","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"}');
INSERT INTO "event" VALUES('evt_24e90499e001GU17b0fKcdlX2A','ses_db16fbe2bffekre8zo0ySuQ0fg',4,'session.next.text.started.1','{"timestamp":1796614408606,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904998001VmqIHzur8fQZ45","textID":"text-0"}');
INSERT INTO "event" VALUES('evt_24e9049a9001bcQlu7ja8bFihC','ses_db16fbe2bffekre8zo0ySuQ0fg',5,'session.next.tool.input.started.1','{"timestamp":1796614408617,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904998001VmqIHzur8fQZ45","callID":"call_000002","name":"bash"}');
INSERT INTO "event" VALUES('evt_24e9049b5001DySqktVRt5nifs','ses_db16fbe2bffekre8zo0ySuQ0fg',6,'session.next.tool.input.ended.1','{"timestamp":1796614408629,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904998001VmqIHzur8fQZ45","callID":"call_000002","text":"{\"command\": \"ls\", \"description\": \"Lists the project''s files\"}"}');
INSERT INTO "event" VALUES('evt_24e9049bd001IKHtMreZ3pS4hI','ses_db16fbe2bffekre8zo0ySuQ0fg',7,'session.next.tool.called.1','{"timestamp":1796614408637,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904998001VmqIHzur8fQZ45","callID":"call_000002","tool":"bash","input":{"command":"ls","description":"Lists the project''s files"},"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e9049c70012qb7GDKtXfHrUt','ses_db16fbe2bffekre8zo0ySuQ0fg',8,'session.next.text.ended.1','{"timestamp":1796614408646,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904998001VmqIHzur8fQZ45","textID":"text-0","text":"I''ll list the files first."}');
INSERT INTO "event" VALUES('evt_24e9049fd001tAPAYid4YS04NM','ses_db16fbe2bffekre8zo0ySuQ0fg',9,'session.next.tool.success.1','{"timestamp":1796614408701,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904998001VmqIHzur8fQZ45","callID":"call_000002","structured":{"exit":0,"truncated":false},"content":[{"type":"text","text":"README.md\ncalc.py\ntest_calc.py\n"},{"type":"text","text":"Command exited with code 0."}],"outputPaths":[],"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e904a4e001zxHAsEseUMpRmJ','ses_db16fbe2bffekre8zo0ySuQ0fg',10,'session.next.step.ended.2','{"timestamp":1796614408782,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904998001VmqIHzur8fQZ45","finish":"tool-calls","cost":0,"tokens":{"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","files":[]}');
INSERT INTO "event" VALUES('evt_24e904ac6002WrPRehS4btBbqW','ses_db16fbe2bffekre8zo0ySuQ0fg',11,'session.next.step.started.1','{"timestamp":1796614408902,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ac6001BD8FEhSKd6aDWq","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"}');
INSERT INTO "event" VALUES('evt_24e904aca001MSEmLqwOGz4QrR','ses_db16fbe2bffekre8zo0ySuQ0fg',12,'session.next.tool.input.started.1','{"timestamp":1796614408906,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ac6001BD8FEhSKd6aDWq","callID":"call_000004","name":"read"}');
INSERT INTO "event" VALUES('evt_24e904acf001gJKc6axHqvAmaQ','ses_db16fbe2bffekre8zo0ySuQ0fg',13,'session.next.tool.input.ended.1','{"timestamp":1796614408911,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ac6001BD8FEhSKd6aDWq","callID":"call_000004","text":"{\"path\": \"README.md\"}"}');
INSERT INTO "event" VALUES('evt_24e904ad2001XpnZ2WkqAzc57c','ses_db16fbe2bffekre8zo0ySuQ0fg',14,'session.next.tool.called.1','{"timestamp":1796614408914,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ac6001BD8FEhSKd6aDWq","callID":"call_000004","tool":"read","input":{"path":"README.md"},"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e904b0c001hqEnVVnwofmg1M','ses_db16fbe2bffekre8zo0ySuQ0fg',15,'session.next.tool.success.1','{"timestamp":1796614408972,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ac6001BD8FEhSKd6aDWq","callID":"call_000004","structured":{"uri":"file:///home/user/project/README.md","name":"README.md","content":"# Demo project\nA tiny projet to try agents on.\n","encoding":"utf8","mime":"text/markdown"},"content":[],"outputPaths":[],"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e904b53001jQlzdWBhwbTqYS','ses_db16fbe2bffekre8zo0ySuQ0fg',16,'session.next.step.ended.2','{"timestamp":1796614409043,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ac6001BD8FEhSKd6aDWq","finish":"tool-calls","cost":0,"tokens":{"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","files":[]}');
INSERT INTO "event" VALUES('evt_24e904bd6002JAgT8V9G4ajKr5','ses_db16fbe2bffekre8zo0ySuQ0fg',17,'session.next.step.started.1','{"timestamp":1796614409174,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904bd6001oR6TgBaio2Fxjy","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"}');
INSERT INTO "event" VALUES('evt_24e904bda001dO4r1S1VWlHAZN','ses_db16fbe2bffekre8zo0ySuQ0fg',18,'session.next.text.started.1','{"timestamp":1796614409178,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904bd6001oR6TgBaio2Fxjy","textID":"text-0"}');
INSERT INTO "event" VALUES('evt_24e904be0001C167KorWEzp9CV','ses_db16fbe2bffekre8zo0ySuQ0fg',19,'session.next.text.ended.1','{"timestamp":1796614409184,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904bd6001oR6TgBaio2Fxjy","textID":"text-0","text":"The project holds README.md, calc.py and test_calc.py. README.md says: \"A tiny projet to try agents on.\" (with a typo)."}');
INSERT INTO "event" VALUES('evt_24e904c25001A1L0HIL70hf64t','ses_db16fbe2bffekre8zo0ySuQ0fg',20,'session.next.step.ended.2','{"timestamp":1796614409253,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904bd6001oR6TgBaio2Fxjy","finish":"stop","cost":0,"tokens":{"input":1060,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","files":[]}');
INSERT INTO "event" VALUES('evt_24e904e52001QxIayhJW1BgBg2','ses_db16fbe2bffekre8zo0ySuQ0fg',21,'session.next.prompt.admitted.1','{"timestamp":1796614409810,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","messageID":"msg_24e904e51001xFh61QCiAVFY42","prompt":{"text":"Fix the typo in README.md."},"delivery":"steer"}');
INSERT INTO "event" VALUES('evt_24e904e5c001D40R0Lh6WO1piN','ses_db16fbe2bffekre8zo0ySuQ0fg',22,'session.next.prompted.1','{"timestamp":1796614409810,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","messageID":"msg_24e904e51001xFh61QCiAVFY42","prompt":{"text":"Fix the typo in README.md."},"delivery":"steer"}');
INSERT INTO "event" VALUES('evt_24e904ecf002zLOlYeo2tai4AE','ses_db16fbe2bffekre8zo0ySuQ0fg',23,'session.next.step.started.1','{"timestamp":1796614409935,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ecf001d7sc8S52hRfFGj","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"}');
INSERT INTO "event" VALUES('evt_24e904ed3001MUDVrOVhG7IjUL','ses_db16fbe2bffekre8zo0ySuQ0fg',24,'session.next.tool.input.started.1','{"timestamp":1796614409939,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ecf001d7sc8S52hRfFGj","callID":"call_000007","name":"edit"}');
INSERT INTO "event" VALUES('evt_24e904edb001BvIIVBT9pvoqXx','ses_db16fbe2bffekre8zo0ySuQ0fg',25,'session.next.tool.input.ended.1','{"timestamp":1796614409946,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ecf001d7sc8S52hRfFGj","callID":"call_000007","text":"{\"path\": \"README.md\", \"oldString\": \"A tiny projet\", \"newString\": \"A tiny project\"}"}');
INSERT INTO "event" VALUES('evt_24e904ee2001JoFHuvGSbZlxp5','ses_db16fbe2bffekre8zo0ySuQ0fg',26,'session.next.tool.called.1','{"timestamp":1796614409954,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ecf001d7sc8S52hRfFGj","callID":"call_000007","tool":"edit","input":{"path":"README.md","oldString":"A tiny projet","newString":"A tiny project"},"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e904f13001HxGOnQa0umjm51','ses_db16fbe2bffekre8zo0ySuQ0fg',27,'session.next.tool.success.1','{"timestamp":1796614410003,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ecf001d7sc8S52hRfFGj","callID":"call_000007","structured":{"files":[{"file":"README.md","patch":"Index: README.md\n===================================================================\n--- README.md\n+++ README.md\n@@ -1,2 +1,2 @@\n # Demo project\n-A tiny projet to try agents on.\n+A tiny project to try agents on.\n","additions":1,"deletions":1,"status":"modified"}],"replacements":1},"content":[{"type":"text","text":"Edited file successfully: README.md\nReplacements: 1\n```diff\n-A tiny projet\n+A tiny project\n```"}],"outputPaths":[],"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e904fc6001u55Loz4a6R88kA','ses_db16fbe2bffekre8zo0ySuQ0fg',28,'session.next.step.ended.2','{"timestamp":1796614410181,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e904ecf001d7sc8S52hRfFGj","finish":"tool-calls","cost":0,"tokens":{"input":1080,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"2536538b2fdf06c4cb69b9429beef9807d1c47b8","files":["README.md"]}');
INSERT INTO "event" VALUES('evt_24e9050140022FpjAFtIq7vGl3','ses_db16fbe2bffekre8zo0ySuQ0fg',29,'session.next.step.started.1','{"timestamp":1796614410260,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905014001kOx7PmLhLPsX5S","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"2536538b2fdf06c4cb69b9429beef9807d1c47b8"}');
INSERT INTO "event" VALUES('evt_24e905018001UBHI1JKH7XcmxL','ses_db16fbe2bffekre8zo0ySuQ0fg',30,'session.next.text.started.1','{"timestamp":1796614410264,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905014001kOx7PmLhLPsX5S","textID":"text-0"}');
INSERT INTO "event" VALUES('evt_24e90501c0018imdzMXJK3gEFW','ses_db16fbe2bffekre8zo0ySuQ0fg',31,'session.next.text.ended.1','{"timestamp":1796614410268,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905014001kOx7PmLhLPsX5S","textID":"text-0","text":"Fixed: \"projet\" is now \"project\" in README.md."}');
INSERT INTO "event" VALUES('evt_24e9050440012OGogZG5InzZOB','ses_db16fbe2bffekre8zo0ySuQ0fg',32,'session.next.step.ended.2','{"timestamp":1796614410308,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905014001kOx7PmLhLPsX5S","finish":"stop","cost":0,"tokens":{"input":1100,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"2536538b2fdf06c4cb69b9429beef9807d1c47b8","files":[]}');
INSERT INTO "event" VALUES('evt_24e905270001NUrDfjhf8JM94d','ses_db16fbe2bffekre8zo0ySuQ0fg',33,'session.next.prompt.admitted.1','{"timestamp":1796614410864,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","messageID":"msg_24e90526f001ITamRYHNXssZV7","prompt":{"text":"Write a NOTES.md saying hello, then run the tests."},"delivery":"steer"}');
INSERT INTO "event" VALUES('evt_24e905284001BYQeHMa63HZxDf','ses_db16fbe2bffekre8zo0ySuQ0fg',34,'session.next.prompted.1','{"timestamp":1796614410864,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","messageID":"msg_24e90526f001ITamRYHNXssZV7","prompt":{"text":"Write a NOTES.md saying hello, then run the tests."},"delivery":"steer"}');
INSERT INTO "event" VALUES('evt_24e905319002LaKoxxzhh0H3Qs','ses_db16fbe2bffekre8zo0ySuQ0fg',35,'session.next.step.started.1','{"timestamp":1796614411033,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9053190014J9ajR46XqHPDg","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"2536538b2fdf06c4cb69b9429beef9807d1c47b8"}');
INSERT INTO "event" VALUES('evt_24e90531d001uoC8J3Takmk9T9','ses_db16fbe2bffekre8zo0ySuQ0fg',36,'session.next.tool.input.started.1','{"timestamp":1796614411037,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9053190014J9ajR46XqHPDg","callID":"call_000010","name":"write"}');
INSERT INTO "event" VALUES('evt_24e905322001YRxpSrXx1Pfweu','ses_db16fbe2bffekre8zo0ySuQ0fg',37,'session.next.tool.input.ended.1','{"timestamp":1796614411042,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9053190014J9ajR46XqHPDg","callID":"call_000010","text":"{\"path\": \"NOTES.md\", \"content\": \"# Notes\\n\\nhello\\n\"}"}');
INSERT INTO "event" VALUES('evt_24e905326001MScbBmzM4RDM3J','ses_db16fbe2bffekre8zo0ySuQ0fg',38,'session.next.tool.called.1','{"timestamp":1796614411046,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9053190014J9ajR46XqHPDg","callID":"call_000010","tool":"write","input":{"path":"NOTES.md","content":"# Notes\n\nhello\n"},"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e90534c001bTBkoXSOicUOpz','ses_db16fbe2bffekre8zo0ySuQ0fg',39,'session.next.tool.success.1','{"timestamp":1796614411084,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9053190014J9ajR46XqHPDg","callID":"call_000010","structured":{"operation":"write","target":"/home/user/project/NOTES.md","resource":"NOTES.md","existed":false},"content":[{"type":"text","text":"Created file successfully: NOTES.md"}],"outputPaths":[],"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e9053d90014pZsPzYfNFK33Z','ses_db16fbe2bffekre8zo0ySuQ0fg',40,'session.next.step.ended.2','{"timestamp":1796614411225,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9053190014J9ajR46XqHPDg","finish":"tool-calls","cost":0,"tokens":{"input":1120,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"2f2e62a853fc7a57891a8e208f58d41040f1a0e9","files":["NOTES.md"]}');
INSERT INTO "event" VALUES('evt_24e9054420020k1bkzE5sy0zBZ','ses_db16fbe2bffekre8zo0ySuQ0fg',41,'session.next.step.started.1','{"timestamp":1796614411330,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905442001wPCE1yL8Zq2YI3","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"2f2e62a853fc7a57891a8e208f58d41040f1a0e9"}');
INSERT INTO "event" VALUES('evt_24e9054450017MOweCiv3QUvhw','ses_db16fbe2bffekre8zo0ySuQ0fg',42,'session.next.text.started.1','{"timestamp":1796614411333,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905442001wPCE1yL8Zq2YI3","textID":"text-0"}');
INSERT INTO "event" VALUES('evt_24e905449001dMfuo5r2qGuXHT','ses_db16fbe2bffekre8zo0ySuQ0fg',43,'session.next.tool.input.started.1','{"timestamp":1796614411337,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905442001wPCE1yL8Zq2YI3","callID":"call_000012","name":"bash"}');
INSERT INTO "event" VALUES('evt_24e90544d001Q5XfXlQIVJZCI5','ses_db16fbe2bffekre8zo0ySuQ0fg',44,'session.next.tool.input.ended.1','{"timestamp":1796614411341,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905442001wPCE1yL8Zq2YI3","callID":"call_000012","text":"{\"command\": \"python3 -m unittest -q 2>&1 | tail -3\", \"description\": \"Runs the unit tests\"}"}');
INSERT INTO "event" VALUES('evt_24e905450001WUO3WbCPoeB1zl','ses_db16fbe2bffekre8zo0ySuQ0fg',45,'session.next.tool.called.1','{"timestamp":1796614411344,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905442001wPCE1yL8Zq2YI3","callID":"call_000012","tool":"bash","input":{"command":"python3 -m unittest -q 2>&1 | tail -3","description":"Runs the unit tests"},"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e905454001cmlG5xuiDK7Ruy','ses_db16fbe2bffekre8zo0ySuQ0fg',46,'session.next.text.ended.1','{"timestamp":1796614411348,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905442001wPCE1yL8Zq2YI3","textID":"text-0","text":"NOTES.md is written; now the tests."}');
INSERT INTO "event" VALUES('evt_24e9054f1001qGgB6LlMx33htR','ses_db16fbe2bffekre8zo0ySuQ0fg',47,'session.next.tool.success.1','{"timestamp":1796614411505,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905442001wPCE1yL8Zq2YI3","callID":"call_000012","structured":{"exit":0,"truncated":false},"content":[{"type":"text","text":"Ran 2 tests in 0.000s\n\nOK\n"},{"type":"text","text":"Command exited with code 0."}],"outputPaths":[],"provider":{"executed":false}}');
INSERT INTO "event" VALUES('evt_24e905552001y2dY3uUvnnPdeo','ses_db16fbe2bffekre8zo0ySuQ0fg',48,'session.next.step.ended.2','{"timestamp":1796614411602,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905442001wPCE1yL8Zq2YI3","finish":"tool-calls","cost":0,"tokens":{"input":1140,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"5963d43c66cae863e988f84ea700bcf0b001d2b3","files":["__pycache__/calc.cpython-311.pyc","__pycache__/test_calc.cpython-311.pyc"]}');
INSERT INTO "event" VALUES('evt_24e9055ad0025RL2S7dRI2AcLS','ses_db16fbe2bffekre8zo0ySuQ0fg',49,'session.next.step.started.1','{"timestamp":1796614411693,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9055ad0011YuENdo56J0IJL","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"5963d43c66cae863e988f84ea700bcf0b001d2b3"}');
INSERT INTO "event" VALUES('evt_24e9055b0001t9LlrxYntKfkkE','ses_db16fbe2bffekre8zo0ySuQ0fg',50,'session.next.text.started.1','{"timestamp":1796614411696,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9055ad0011YuENdo56J0IJL","textID":"text-0"}');
INSERT INTO "event" VALUES('evt_24e9055b3002sldWQp78eeBiMI','ses_db16fbe2bffekre8zo0ySuQ0fg',51,'session.next.text.ended.1','{"timestamp":1796614411699,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9055ad0011YuENdo56J0IJL","textID":"text-0","text":"All tests pass (2 tests, OK)."}');
INSERT INTO "event" VALUES('evt_24e9055e5001uZjrC4RQNHng11','ses_db16fbe2bffekre8zo0ySuQ0fg',52,'session.next.step.ended.2','{"timestamp":1796614411749,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e9055ad0011YuENdo56J0IJL","finish":"stop","cost":0,"tokens":{"input":1160,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"5963d43c66cae863e988f84ea700bcf0b001d2b3","files":[]}');
INSERT INTO "event" VALUES('evt_24e905b120018jKzbeVUWVznEZ','ses_db16fbe2bffekre8zo0ySuQ0fg',53,'session.next.prompt.admitted.1','{"timestamp":1796614413074,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","messageID":"msg_24e905b11001mqOQPYerMvjlqT","prompt":{"text":"What did we change so far?"},"delivery":"steer"}');
INSERT INTO "event" VALUES('evt_24e905b25001nwy9Tc1Bd624bV','ses_db16fbe2bffekre8zo0ySuQ0fg',54,'session.next.prompted.1','{"timestamp":1796614413074,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","messageID":"msg_24e905b11001mqOQPYerMvjlqT","prompt":{"text":"What did we change so far?"},"delivery":"steer"}');
INSERT INTO "event" VALUES('evt_24e905b9c002lZsESr4AlLmWzY','ses_db16fbe2bffekre8zo0ySuQ0fg',55,'session.next.step.started.1','{"timestamp":1796614413212,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905b9c001JyJ9h4lvWI3MbY","agent":"build","model":{"id":"fake-model","providerID":"fake"},"snapshot":"5963d43c66cae863e988f84ea700bcf0b001d2b3"}');
INSERT INTO "event" VALUES('evt_24e905b9f0010N0qgmef0QTC2W','ses_db16fbe2bffekre8zo0ySuQ0fg',56,'session.next.text.started.1','{"timestamp":1796614413215,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905b9c001JyJ9h4lvWI3MbY","textID":"text-0"}');
INSERT INTO "event" VALUES('evt_24e905ba3001Hj2pkI0uYpp0sA','ses_db16fbe2bffekre8zo0ySuQ0fg',57,'session.next.text.ended.1','{"timestamp":1796614413219,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905b9c001JyJ9h4lvWI3MbY","textID":"text-0","text":"We fixed the README typo and added NOTES.md."}');
INSERT INTO "event" VALUES('evt_24e905be0001tAI20b05wXQmoq','ses_db16fbe2bffekre8zo0ySuQ0fg',58,'session.next.step.ended.2','{"timestamp":1796614413280,"sessionID":"ses_db16fbe2bffekre8zo0ySuQ0fg","assistantMessageID":"msg_24e905b9c001JyJ9h4lvWI3MbY","finish":"stop","cost":0,"tokens":{"input":1180,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"snapshot":"5963d43c66cae863e988f84ea700bcf0b001d2b3","files":[]}');
CREATE TABLE `event_sequence` (
          `aggregate_id` text PRIMARY KEY,
          `seq` integer NOT NULL,
          `owner_id` text
        );
INSERT INTO "event_sequence" VALUES('ses_db16fbe2bffekre8zo0ySuQ0fg',58,NULL);
CREATE TABLE `message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE "migration" (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
INSERT INTO "migration" VALUES('20260127222353_familiar_lady_ursula',1796614400765);
INSERT INTO "migration" VALUES('20260211171708_add_project_commands',1796614400766);
INSERT INTO "migration" VALUES('20260213144116_wakeful_the_professor',1796614400766);
INSERT INTO "migration" VALUES('20260225215848_workspace',1796614400766);
INSERT INTO "migration" VALUES('20260227213759_add_session_workspace_id',1796614400767);
INSERT INTO "migration" VALUES('20260228203230_blue_harpoon',1796614400767);
INSERT INTO "migration" VALUES('20260303231226_add_workspace_fields',1796614400767);
INSERT INTO "migration" VALUES('20260309230000_move_org_to_state',1796614400767);
INSERT INTO "migration" VALUES('20260312043431_session_message_cursor',1796614400767);
INSERT INTO "migration" VALUES('20260323234822_events',1796614400767);
INSERT INTO "migration" VALUES('20260410174513_workspace-name',1796614400768);
INSERT INTO "migration" VALUES('20260413175956_chief_energizer',1796614400768);
INSERT INTO "migration" VALUES('20260423070820_add_icon_url_override',1796614400768);
INSERT INTO "migration" VALUES('20260427172553_slow_nightmare',1796614400768);
INSERT INTO "migration" VALUES('20260428004200_add_session_path',1796614400768);
INSERT INTO "migration" VALUES('20260501142318_next_venus',1796614400768);
INSERT INTO "migration" VALUES('20260504145000_add_sync_owner',1796614400769);
INSERT INTO "migration" VALUES('20260507164347_add_workspace_time',1796614400769);
INSERT INTO "migration" VALUES('20260510033149_session_usage',1796614400769);
INSERT INTO "migration" VALUES('20260511000411_data_migration_state',1796614400770);
INSERT INTO "migration" VALUES('20260511173437_session-metadata',1796614400770);
INSERT INTO "migration" VALUES('20260601010001_normalize_storage_paths',1796614400770);
INSERT INTO "migration" VALUES('20260601202201_amazing_prowler',1796614400771);
INSERT INTO "migration" VALUES('20260602002951_lowly_union_jack',1796614400771);
INSERT INTO "migration" VALUES('20260602182828_add_project_directories',1796614400771);
INSERT INTO "migration" VALUES('20260603001617_session_message_projection_indexes',1796614400771);
INSERT INTO "migration" VALUES('20260603040000_session_message_projection_order',1796614400772);
INSERT INTO "migration" VALUES('20260603141458_session_input_inbox',1796614400772);
INSERT INTO "migration" VALUES('20260603160727_jittery_ezekiel_stane',1796614400772);
INSERT INTO "migration" VALUES('20260604172448_event_sourced_session_input',1796614400772);
INSERT INTO "migration" VALUES('20260605003541_add_session_context_snapshot',1796614400773);
INSERT INTO "migration" VALUES('20260605042240_add_context_epoch_agent',1796614400773);
INSERT INTO "migration" VALUES('20260611035744_credential',1796614400773);
INSERT INTO "migration" VALUES('20260611192811_lush_chimera',1796614400773);
INSERT INTO "migration" VALUES('20260612174303_project_dir_strategy',1796614400774);
INSERT INTO "migration" VALUES('20260622142730_simplify_session_context_epoch',1796614400774);
INSERT INTO "migration" VALUES('20260622170816_reset_v2_session_state',1796614400774);
INSERT INTO "migration" VALUES('20260622202450_simplify_session_input',1796614400774);
CREATE TABLE `part` (
          `id` text PRIMARY KEY,
          `message_id` text NOT NULL,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `permission` (
          `id` text PRIMARY KEY,
          `project_id` text NOT NULL,
          `action` text NOT NULL,
          `resource` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `fk_permission_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `project` (
          `id` text PRIMARY KEY,
          `worktree` text NOT NULL,
          `vcs` text,
          `name` text,
          `icon_url` text,
          `icon_url_override` text,
          `icon_color` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_initialized` integer,
          `sandboxes` text NOT NULL,
          `commands` text
        );
INSERT INTO "project" VALUES('c0cf56d18648ca859930f6122d13725063b2e138','/home/user/project','git',NULL,NULL,NULL,NULL,1796614406693,1796614406693,NULL,'[]',NULL);
CREATE TABLE `project_directory` (
          `project_id` text NOT NULL,
          `directory` text NOT NULL,
          `type` text,
          `strategy` text,
          `time_created` integer NOT NULL,
          CONSTRAINT `project_directory_pk` PRIMARY KEY(`project_id`, `directory`),
          CONSTRAINT `fk_project_directory_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session` (
          `id` text PRIMARY KEY,
          `project_id` text NOT NULL,
          `workspace_id` text,
          `parent_id` text,
          `slug` text NOT NULL,
          `directory` text NOT NULL,
          `path` text,
          `title` text NOT NULL,
          `version` text NOT NULL,
          `share_url` text,
          `summary_additions` integer,
          `summary_deletions` integer,
          `summary_files` integer,
          `summary_diffs` text,
          `metadata` text,
          `cost` real DEFAULT 0 NOT NULL,
          `tokens_input` integer DEFAULT 0 NOT NULL,
          `tokens_output` integer DEFAULT 0 NOT NULL,
          `tokens_reasoning` integer DEFAULT 0 NOT NULL,
          `tokens_cache_read` integer DEFAULT 0 NOT NULL,
          `tokens_cache_write` integer DEFAULT 0 NOT NULL,
          `revert` text,
          `permission` text,
          `agent` text,
          `model` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_compacting` integer,
          `time_archived` integer,
          CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
INSERT INTO "session" VALUES('ses_db16fbe2bffekre8zo0ySuQ0fg','c0cf56d18648ca859930f6122d13725063b2e138',NULL,NULL,'quiet-orchid','/home/user/project','','New session - 2026-12-07T03:33:26.695Z','1.18.33',NULL,NULL,NULL,NULL,NULL,NULL,0.0,0,0,0,0,0,NULL,NULL,NULL,NULL,1796614406695,1796614406695,NULL,NULL);
CREATE TABLE `session_context_epoch` (
          `session_id` text PRIMARY KEY,
          `baseline` text NOT NULL,
          `snapshot` text NOT NULL,
          `baseline_seq` integer NOT NULL,
          CONSTRAINT `fk_session_context_epoch_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
INSERT INTO "session_context_epoch" VALUES('ses_db16fbe2bffekre8zo0ySuQ0fg','Here is some useful information about the environment you are running in:
<env>
  Working directory: /home/user/project
  Workspace root folder: /home/user/project
  Is directory a git repo: yes
  Platform: linux
</env>

Today''s date: Mon Dec 07 2026

Skills provide specialized instructions and workflows for specific tasks.
Use the skill tool to load a skill when a task matches its description.
<available_skills>
  <skill>
    <name>customize-opencode</name>
    <description>Use ONLY when the user is editing or creating opencode''s own configuration: opencode.json, opencode.jsonc, files under .opencode/, or files under ~/.config/opencode/. Also use when creating or fixing opencode agents, subagents, commands, skills, plugins, MCP servers, or permission rules. Do not use for the user''s own application code, or for any project that is not configuring opencode itself.</description>
  </skill>
</available_skills>','{"core/environment":{"value":"<env>\n  Working directory: /home/user/project\n  Workspace root folder: /home/user/project\n  Is directory a git repo: yes\n  Platform: linux\n</env>"},"core/date":{"value":"Mon Dec 07 2026"},"core/skill-guidance":{"value":[{"name":"customize-opencode","description":"Use ONLY when the user is editing or creating opencode''s own configuration: opencode.json, opencode.jsonc, files under .opencode/, or files under ~/.config/opencode/. Also use when creating or fixing opencode agents, subagents, commands, skills, plugins, MCP servers, or permission rules. Do not use for the user''s own application code, or for any project that is not configuring opencode itself."}],"removed":"Skill guidance is no longer available. Do not use any previously listed skill."}}',1);
CREATE TABLE `session_input` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `prompt` text NOT NULL,
          `delivery` text NOT NULL,
          `admitted_seq` integer NOT NULL,
          `promoted_seq` integer,
          `time_created` integer NOT NULL,
          CONSTRAINT `fk_session_input_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
INSERT INTO "session_input" VALUES('msg_24e904840001m9av1ZaviK1JSd','ses_db16fbe2bffekre8zo0ySuQ0fg','{"text":"List the files here and tell me what README.md says."}','steer',1,2,1796614408257);
INSERT INTO "session_input" VALUES('msg_24e904e51001xFh61QCiAVFY42','ses_db16fbe2bffekre8zo0ySuQ0fg','{"text":"Fix the typo in README.md."}','steer',21,22,1796614409810);
INSERT INTO "session_input" VALUES('msg_24e90526f001ITamRYHNXssZV7','ses_db16fbe2bffekre8zo0ySuQ0fg','{"text":"Write a NOTES.md saying hello, then run the tests."}','steer',33,34,1796614410864);
INSERT INTO "session_input" VALUES('msg_24e905b11001mqOQPYerMvjlqT','ses_db16fbe2bffekre8zo0ySuQ0fg','{"text":"What did we change so far?"}','steer',53,54,1796614413074);
CREATE TABLE `session_message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `type` text NOT NULL,
          `seq` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_session_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
INSERT INTO "session_message" VALUES('msg_24e904840001m9av1ZaviK1JSd','ses_db16fbe2bffekre8zo0ySuQ0fg','user',2,1796614408257,1796614408325,'{"time":{"created":1796614408257},"text":"List the files here and tell me what README.md says."}');
INSERT INTO "session_message" VALUES('msg_24e904998001VmqIHzur8fQZ45','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',3,1796614408600,1796614408786,'{"time":{"created":1796614408600,"completed":1796614408782},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"text","id":"text-0","text":"I''ll list the files first."},{"type":"tool","id":"call_000002","name":"bash","provider":{"executed":false},"state":{"status":"completed","input":{"command":"ls","description":"Lists the project''s files"},"content":[{"type":"text","text":"README.md\ncalc.py\ntest_calc.py\n"},{"type":"text","text":"Command exited with code 0."}],"outputPaths":[],"structured":{"exit":0,"truncated":false}},"time":{"created":1796614408617,"ran":1796614408637,"completed":1796614408701}}],"snapshot":{"start":"3e311fc3b5931b16ce9089846292da4b2701565d","end":"3e311fc3b5931b16ce9089846292da4b2701565d","files":[]},"finish":"tool-calls","cost":0,"tokens":{"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO "session_message" VALUES('msg_24e904ac6001BD8FEhSKd6aDWq','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',11,1796614408902,1796614409049,'{"time":{"created":1796614408902,"completed":1796614409043},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"tool","id":"call_000004","name":"read","provider":{"executed":false},"state":{"status":"completed","input":{"path":"README.md"},"content":[],"outputPaths":[],"structured":{"uri":"file:///home/user/project/README.md","name":"README.md","content":"# Demo project\nA tiny projet to try agents on.\n","encoding":"utf8","mime":"text/markdown"}},"time":{"created":1796614408906,"ran":1796614408914,"completed":1796614408972}}],"snapshot":{"start":"3e311fc3b5931b16ce9089846292da4b2701565d","end":"3e311fc3b5931b16ce9089846292da4b2701565d","files":[]},"finish":"tool-calls","cost":0,"tokens":{"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO "session_message" VALUES('msg_24e904bd6001oR6TgBaio2Fxjy','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',17,1796614409174,1796614409256,'{"time":{"created":1796614409174,"completed":1796614409253},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"text","id":"text-0","text":"The project holds README.md, calc.py and test_calc.py. README.md says: \"A tiny projet to try agents on.\" (with a typo)."}],"snapshot":{"start":"3e311fc3b5931b16ce9089846292da4b2701565d","end":"3e311fc3b5931b16ce9089846292da4b2701565d","files":[]},"finish":"stop","cost":0,"tokens":{"input":1060,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO "session_message" VALUES('msg_24e904e51001xFh61QCiAVFY42','ses_db16fbe2bffekre8zo0ySuQ0fg','user',22,1796614409810,1796614409822,'{"time":{"created":1796614409810},"text":"Fix the typo in README.md."}');
INSERT INTO "session_message" VALUES('msg_24e904ecf001d7sc8S52hRfFGj','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',23,1796614409935,1796614410185,'{"time":{"created":1796614409935,"completed":1796614410181},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"tool","id":"call_000007","name":"edit","provider":{"executed":false},"state":{"status":"completed","input":{"path":"README.md","oldString":"A tiny projet","newString":"A tiny project"},"content":[{"type":"text","text":"Edited file successfully: README.md\nReplacements: 1\n```diff\n-A tiny projet\n+A tiny project\n```"}],"outputPaths":[],"structured":{"files":[{"file":"README.md","patch":"Index: README.md\n===================================================================\n--- README.md\n+++ README.md\n@@ -1,2 +1,2 @@\n # Demo project\n-A tiny projet to try agents on.\n+A tiny project to try agents on.\n","additions":1,"deletions":1,"status":"modified"}],"replacements":1}},"time":{"created":1796614409939,"ran":1796614409954,"completed":1796614410003}}],"snapshot":{"start":"3e311fc3b5931b16ce9089846292da4b2701565d","end":"2536538b2fdf06c4cb69b9429beef9807d1c47b8","files":["README.md"]},"finish":"tool-calls","cost":0,"tokens":{"input":1080,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO "session_message" VALUES('msg_24e905014001kOx7PmLhLPsX5S','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',29,1796614410260,1796614410311,'{"time":{"created":1796614410260,"completed":1796614410308},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"text","id":"text-0","text":"Fixed: \"projet\" is now \"project\" in README.md."}],"snapshot":{"start":"2536538b2fdf06c4cb69b9429beef9807d1c47b8","end":"2536538b2fdf06c4cb69b9429beef9807d1c47b8","files":[]},"finish":"stop","cost":0,"tokens":{"input":1100,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO "session_message" VALUES('msg_24e90526f001ITamRYHNXssZV7','ses_db16fbe2bffekre8zo0ySuQ0fg','user',34,1796614410864,1796614410887,'{"time":{"created":1796614410864},"text":"Write a NOTES.md saying hello, then run the tests."}');
INSERT INTO "session_message" VALUES('msg_24e9053190014J9ajR46XqHPDg','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',35,1796614411033,1796614411229,'{"time":{"created":1796614411033,"completed":1796614411225},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"tool","id":"call_000010","name":"write","provider":{"executed":false},"state":{"status":"completed","input":{"path":"NOTES.md","content":"# Notes\n\nhello\n"},"content":[{"type":"text","text":"Created file successfully: NOTES.md"}],"outputPaths":[],"structured":{"operation":"write","target":"/home/user/project/NOTES.md","resource":"NOTES.md","existed":false}},"time":{"created":1796614411037,"ran":1796614411046,"completed":1796614411084}}],"snapshot":{"start":"2536538b2fdf06c4cb69b9429beef9807d1c47b8","end":"2f2e62a853fc7a57891a8e208f58d41040f1a0e9","files":["NOTES.md"]},"finish":"tool-calls","cost":0,"tokens":{"input":1120,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO "session_message" VALUES('msg_24e905442001wPCE1yL8Zq2YI3','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',41,1796614411330,1796614411605,'{"time":{"created":1796614411330,"completed":1796614411602},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"text","id":"text-0","text":"NOTES.md is written; now the tests."},{"type":"tool","id":"call_000012","name":"bash","provider":{"executed":false},"state":{"status":"completed","input":{"command":"python3 -m unittest -q 2>&1 | tail -3","description":"Runs the unit tests"},"content":[{"type":"text","text":"Ran 2 tests in 0.000s\n\nOK\n"},{"type":"text","text":"Command exited with code 0."}],"outputPaths":[],"structured":{"exit":0,"truncated":false}},"time":{"created":1796614411337,"ran":1796614411344,"completed":1796614411505}}],"snapshot":{"start":"2f2e62a853fc7a57891a8e208f58d41040f1a0e9","end":"5963d43c66cae863e988f84ea700bcf0b001d2b3","files":["__pycache__/calc.cpython-311.pyc","__pycache__/test_calc.cpython-311.pyc"]},"finish":"tool-calls","cost":0,"tokens":{"input":1140,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO "session_message" VALUES('msg_24e9055ad0011YuENdo56J0IJL','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',49,1796614411693,1796614411752,'{"time":{"created":1796614411693,"completed":1796614411749},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"text","id":"text-0","text":"All tests pass (2 tests, OK)."}],"snapshot":{"start":"5963d43c66cae863e988f84ea700bcf0b001d2b3","end":"5963d43c66cae863e988f84ea700bcf0b001d2b3","files":[]},"finish":"stop","cost":0,"tokens":{"input":1160,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO "session_message" VALUES('msg_24e905b11001mqOQPYerMvjlqT','ses_db16fbe2bffekre8zo0ySuQ0fg','user',54,1796614413074,1796614413095,'{"time":{"created":1796614413074},"text":"What did we change so far?"}');
INSERT INTO "session_message" VALUES('msg_24e905b9c001JyJ9h4lvWI3MbY','ses_db16fbe2bffekre8zo0ySuQ0fg','assistant',55,1796614413212,1796614413283,'{"time":{"created":1796614413212,"completed":1796614413280},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"text","id":"text-0","text":"We fixed the README typo and added NOTES.md."}],"snapshot":{"start":"5963d43c66cae863e988f84ea700bcf0b001d2b3","end":"5963d43c66cae863e988f84ea700bcf0b001d2b3","files":[]},"finish":"stop","cost":0,"tokens":{"input":1180,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}');
CREATE TABLE `session_share` (
          `session_id` text PRIMARY KEY,
          `id` text NOT NULL,
          `secret` text NOT NULL,
          `url` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `fk_session_share_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `todo` (
          `session_id` text NOT NULL,
          `content` text NOT NULL,
          `status` text NOT NULL,
          `priority` text NOT NULL,
          `position` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `todo_pk` PRIMARY KEY(`session_id`, `position`),
          CONSTRAINT `fk_todo_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `workspace` (
          `id` text PRIMARY KEY,
          `type` text NOT NULL,
          `name` text DEFAULT '' NOT NULL,
          `branch` text,
          `directory` text,
          `extra` text,
          `project_id` text NOT NULL,
          `time_used` integer NOT NULL,
          CONSTRAINT `fk_workspace_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE UNIQUE INDEX `event_aggregate_seq_idx` ON `event` (`aggregate_id`,`seq`);
CREATE INDEX `event_aggregate_type_seq_idx` ON `event` (`aggregate_id`,`type`,`seq`);
CREATE UNIQUE INDEX `permission_project_action_resource_idx` ON `permission` (`project_id`,`action`,`resource`);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_input_session_pending_delivery_seq_idx` ON `session_input` (`session_id`,`promoted_seq`,`delivery`,`admitted_seq`);
CREATE UNIQUE INDEX `session_input_session_admitted_seq_idx` ON `session_input` (`session_id`,`admitted_seq`);
CREATE UNIQUE INDEX `session_input_session_promoted_seq_idx` ON `session_input` (`session_id`,`promoted_seq`);
CREATE UNIQUE INDEX `session_message_session_seq_idx` ON `session_message` (`session_id`,`seq`);
CREATE INDEX `session_message_session_type_seq_idx` ON `session_message` (`session_id`,`type`,`seq`);
CREATE INDEX `session_message_session_time_created_id_idx` ON `session_message` (`session_id`,`time_created`,`id`);
CREATE INDEX `session_message_time_created_idx` ON `session_message` (`time_created`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_workspace_idx` ON `session` (`workspace_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
CREATE INDEX `todo_session_idx` ON `todo` (`session_id`);
COMMIT;
